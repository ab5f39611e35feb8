"""Helpers of the HTTP tests: ``agentworld serve`` in a subprocess on a loopback port,
over a SQLite file, with agents that talk to the loopback OpenAI wire server (``server`` in
``tests/conftest.py``). An SSE client reads the event stream on a thread, as a browser would."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from agentworld.runtime.titles import TITLE_INSTRUCTION
from agentworld.testing.openai_wire import AgentScript, OpenAIWireServer


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(home: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "AGENTWORLD_LLM_RETRIES": "1", "NO_COLOR": "1"}
    for name in ("AGENTWORLD_DB", "AGENTWORLD_TOKEN", "OPENAI_API_KEY"):
        env.pop(name, None)
    return env


@dataclass
class Served:
    """A running ``agentworld serve`` process."""

    process: subprocess.Popen[str]
    base_url: str
    db_url: str
    token: str | None = None
    home: Path = field(default_factory=Path)

    def client(self, **kw: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30, **kw)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(
    db_url: str, home: Path, *args: str, token: str | None = None, host: str = "127.0.0.1",
    env: dict[str, str] | None = None,
) -> Served:
    port = free_port()
    command = [sys.executable, "-m", "agentworld", "--db", db_url, "serve", "--host", host,
               "--port", str(port), *args]
    if token:
        command += ["--token", token]
    log = home / f"serve-{port}.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            command, env={**server_env(home), **(env or {})}, stdout=subprocess.DEVNULL, stderr=stderr, text=True
        )
    served = Served(process, f"http://127.0.0.1:{port}", db_url, token, home)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text()}")
        try:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            if httpx.get(f"{served.base_url}/health", headers=headers, timeout=1).status_code == 200:
                return served
        except httpx.TransportError:
            time.sleep(0.05)
    served.stop()
    raise AssertionError("server did not start")


class LLMScript(AgentScript):
    """The shared by-agent responder (``agentworld.testing``), knowing the runtime's title
    instruction."""

    def __init__(self) -> None:
        super().__init__(TITLE_INSTRUCTION)


def refusal(answer: httpx.Response) -> tuple[int, str, str]:
    """A refusal's status, code and message, once its body is checked to be the API's error
    shape (``{"error": {"code", "message"}}`` and nothing else)."""
    body = answer.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return answer.status_code, body["error"]["code"], body["error"]["message"]


def make_world(api: httpx.Client, name: str, llm: OpenAIWireServer, *agents: str, **settings: Any) -> str:
    """A world whose agents talk to ``llm`` with the system prompt ``agent:<name>``; returns
    its current chat."""
    assert api.post("/api/worlds", json={"name": name, **settings}).status_code == 201
    for agent in agents:
        body = {"name": agent, "provider": "openai", "model": "m", "baseUrl": llm.base_url,
                "systemPrompt": f"agent:{name}/{agent}"}
        assert api.post(f"/api/worlds/{name}/agents", json=body).status_code == 201
    created = api.post(f"/api/worlds/{name}/chats")
    assert created.status_code == 201
    return str(created.json()["chatId"])


@dataclass(frozen=True)
class Frame:
    """One SSE event as received."""

    id: int | None
    event: str
    data: dict[str, Any]


class SSEClient:
    """Reads ``/events`` on a thread, as a browser's EventSource would; frames go to a queue."""

    def __init__(self, url: str, *, headers: dict[str, str] | None = None) -> None:
        self.frames: list[Frame] = []
        self._queue: queue.Queue[Frame] = queue.Queue()
        self._client = httpx.Client(timeout=httpx.Timeout(30, read=None))
        self._url = url
        self._headers = headers or {}
        self._stop = threading.Event()
        self._socket: socket.socket | None = None
        self.connected = threading.Event()
        self.status: int | None = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        assert self.connected.wait(10), "the event stream did not open"

    def _read(self) -> None:
        try:
            with self._client.stream("GET", self._url, headers=self._headers) as response:
                self.status = response.status_code
                stream = response.extensions.get("network_stream")
                self._socket = stream.get_extra_info("socket") if stream is not None else None
                self.connected.set()
                fields: dict[str, str] = {}
                data: list[str] = []
                for line in response.iter_lines():
                    if self._stop.is_set():
                        return
                    if line == "":
                        if data:
                            ident = fields.get("id")
                            frame = Frame(int(ident) if ident else None, fields.get("event", "message"),
                                          json.loads("\n".join(data)))
                            self._queue.put(frame)
                        fields, data = {}, []
                    elif line.startswith(":"):
                        continue
                    else:
                        name, _, value = line.partition(":")
                        value = value.removeprefix(" ")
                        if name == "data":
                            data.append(value)
                        else:
                            fields[name] = value
        except (httpx.HTTPError, RuntimeError):
            return
        finally:
            self.connected.set()

    def wait_for(self, predicate: Callable[[Frame], bool], timeout: float = 20) -> Frame:
        """Frames are kept in ``frames`` as they come; returns the first (new) one that matches."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no matching event; got {[(f.id, f.event) for f in self.frames]}")
            try:
                frame = self._queue.get(timeout=left)
            except queue.Empty:
                continue
            self.frames.append(frame)
            if predicate(frame):
                return frame

    def wait_closed(self, timeout: float) -> bool:
        """Whether the server ended the stream within ``timeout`` seconds (frames sent before
        the end are in the queue, for ``wait_for``)."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self) -> None:
        """Hang up at once, as a closed browser tab does (the reading thread wakes and ends)."""
        self._stop.set()
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)
        self._client.close()

    def __enter__(self) -> SSEClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def is_message(sender: str, contains: str = "") -> Callable[[Frame], bool]:
    def match(frame: Frame) -> bool:
        if frame.event != "message":
            return False
        message = frame.data["message"]
        return bool(message["sender"] == sender and contains in (message["content"] or ""))

    return match

