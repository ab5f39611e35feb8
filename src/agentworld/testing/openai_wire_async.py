"""An OpenAI chat-completions loopback server on asyncio, run in a child process.

Why: :class:`~agentworld.testing.openai_wire.OpenAIWireServer` runs a thread per
connection inside the process under test. That is what tests want (scripted replies,
every body kept), but with a thousand connections open at once the threads, and the
GIL they share with the code being measured, make the server the bottleneck: the bare
``openai`` SDK reached 81 requests/s against it, with timeouts. This server answers
every request at once from one event loop in its own process, so a benchmark measures
the client, not the harness, and the server's CPU is not charged to the client.

It speaks the same wire format as ``OpenAIWireServer`` for what a benchmark sends:
``POST /v1/chat/completions`` streamed (SSE in a chunked body, ``include_usage``
honoured) or not, answered by :func:`~agentworld.testing.openai_wire.echo_responder`
(optionally after ``--delay`` seconds, a slow model: the loop waits, no thread does), and
``GET /v1/models``. It keeps counts, not bodies: ``GET /_wire/stats`` and
``POST /_wire/clear`` (what :class:`OpenAIWireProcess` calls). Stdlib only::

    python -m agentworld.testing.openai_wire_async [--port N] [--delay S]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Self

from agentworld.testing.openai_wire import _envelope, _events, _finish, _usage, echo_responder
from agentworld.testing.processes import stop_process

__all__ = ["OpenAIWireProcess", "WireStats", "serve"]

_MAX_HEAD = 64 * 1024
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 431: "Request Header Fields Too Large"}
_REASONS |= {501: "Not Implemented"}
_MODELS = {
    "object": "list",
    "data": [{"id": "wire-test", "object": "model", "created": 0, "owned_by": "agentworld"}],
}

WireStats = dict[str, int]
"""``requests`` (chat completions answered), ``streamed`` (of those, streamed),
``errors`` (requests answered 4xx/5xx), ``connections`` (connections that carried a chat
completion since the last clear: how wide the client's pool went) and ``open_connections``
(open now, of any kind)."""


class _Counts:
    """What the server has seen; one event loop, so no lock."""

    def __init__(self) -> None:
        self.open = 0
        self.epoch = 0
        self.clear()

    def clear(self) -> None:
        self.epoch += 1
        self.requests = self.streamed = self.errors = self.connections = 0

    def as_dict(self) -> WireStats:
        return {
            "requests": self.requests,
            "streamed": self.streamed,
            "errors": self.errors,
            "connections": self.connections,
            "open_connections": self.open,
        }


def _completion(body: dict[str, Any]) -> bytes:
    """The non-streamed answer, shaped as ``OpenAIWireServer._complete`` shapes it."""
    reply = echo_responder(body)
    message = {"role": "assistant", "content": reply.content, "refusal": None}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}
    payload = _envelope(body, "chat.completion")
    payload |= {"choices": [choice], "usage": _usage(body, reply)}
    return json.dumps(payload).encode()


def _stream_body(body: dict[str, Any]) -> bytes:
    """The whole streamed answer as chunked-transfer framing: one chunk per SSE event."""
    parts: list[bytes] = []
    for event in _events(body, echo_responder(body), []):
        data = f"data: {event}\n\n".encode()
        parts.append(b"%x\r\n%s\r\n" % (len(data), data))
    parts.append(b"0\r\n\r\n")
    return b"".join(parts)


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: requests parsed from the buffer, answered in order.

    Clients like ``httpx`` do not pipeline, but the buffer is parsed in a loop anyway, and
    while a delayed answer is pending nothing after it is answered, so order holds.
    """

    def __init__(self, counts: _Counts, delay: float) -> None:
        self._counts = counts
        self._delay = delay
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self._waiting = False  # a delayed answer is pending
        self._counted_in = 0  # the last counts epoch this connection carried a completion in

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._counts.open += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self._counts.open -= 1
        self._transport = None

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self._process()

    def _process(self) -> None:
        while self._transport is not None and not self._waiting:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > _MAX_HEAD:
                    self._send(431, b"", "text/plain", keep_alive=False)
                return
            lines = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
            try:
                method, target, version = lines[0].split(" ", 2)
            except ValueError:
                self._send(400, b"", "text/plain", keep_alive=False)
                return
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._send(501, b"", "text/plain", keep_alive=False)  # httpx sends lengths
                return
            length = int(headers.get("content-length") or 0)
            start = end + 4
            if len(self._buffer) < start + length:
                return
            body = bytes(self._buffer[start : start + length])
            del self._buffer[: start + length]
            keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
            self._handle(method, target.split("?")[0].rstrip("/"), body, keep_alive)

    def _handle(self, method: str, path: str, raw: bytes, keep_alive: bool) -> None:
        if method == "POST" and path.endswith("/chat/completions"):
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = None
            if not isinstance(body, dict) or "model" not in body or "messages" not in body:
                message = "Request body must be a JSON object with 'model' and 'messages'."
                self._error(400, message, keep_alive)
                return
            self._counts.requests += 1
            if self._counted_in != self._counts.epoch:
                self._counted_in = self._counts.epoch
                self._counts.connections += 1
            if body.get("stream"):
                self._counts.streamed += 1
                self._later(200, _stream_body(body), "text/event-stream; charset=utf-8", keep_alive)
            else:
                self._later(200, _completion(body), "application/json", keep_alive)
        elif method == "GET" and path.endswith("/models"):
            self._send(200, json.dumps(_MODELS).encode(), "application/json", keep_alive=keep_alive)
        elif method == "GET" and path == "/_wire/stats":
            stats = json.dumps(self._counts.as_dict()).encode()
            self._send(200, stats, "application/json", keep_alive=keep_alive)
        elif method == "POST" and path == "/_wire/clear":
            self._counts.clear()
            self._send(200, b"{}", "application/json", keep_alive=keep_alive)
        else:
            self._error(404, f"Unknown path {path}", keep_alive)

    def _error(self, status: int, message: str, keep_alive: bool) -> None:
        self._counts.errors += 1
        kind = "invalid_request_error" if status == 400 else "not_found_error"
        err = {"message": message, "type": kind, "param": None, "code": kind}
        self._send(status, json.dumps({"error": err}).encode(), "application/json", keep_alive)

    def _later(self, status: int, payload: bytes, content_type: str, keep_alive: bool) -> None:
        """Answer now, or after the server's ``delay`` without blocking the loop."""
        if self._delay <= 0:
            self._send(status, payload, content_type, keep_alive)
            return
        self._waiting = True

        def send() -> None:
            self._waiting = False
            self._send(status, payload, content_type, keep_alive)
            self._process()  # anything that arrived meanwhile

        asyncio.get_running_loop().call_later(self._delay, send)

    def _send(self, status: int, payload: bytes, content_type: str, keep_alive: bool) -> None:
        if self._transport is None:
            return  # the client went away while the answer was delayed
        framing = (
            b"Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n"
            if content_type.startswith("text/event-stream")
            else b"Content-Length: %d\r\n" % len(payload)
        )
        head = b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\n%s%s\r\n" % (
            status,
            _REASONS.get(status, "Error").encode(),
            content_type.encode(),
            framing,
            b"" if keep_alive else b"Connection: close\r\n",
        )
        self._transport.write(head + payload)
        if not keep_alive:
            self._transport.close()
            self._transport = None


async def serve(host: str, port: int, *, delay: float = 0.0) -> None:
    """Serve until cancelled; print the base URL (first stdout line) once listening."""
    loop = asyncio.get_running_loop()
    counts = _Counts()
    server = await loop.create_server(
        lambda: _Connection(counts, delay), host, port, backlog=4096, reuse_address=True
    )
    bound_host, bound_port = server.sockets[0].getsockname()[:2]
    print(f"http://{bound_host}:{bound_port}/v1", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    summary = (__doc__ or "").splitlines()[0]
    parser = argparse.ArgumentParser(description=summary)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)

    async def run() -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await serve(args.host, args.port, delay=args.delay)

    asyncio.run(run())


class OpenAIWireProcess:
    """:func:`serve` in a child process, for the duration of a ``with`` block.

    Only counts come back (:meth:`stats`); a benchmark that needs to see bodies or script
    replies wants ``OpenAIWireServer`` instead.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, delay: float = 0.0) -> None:
        self._argv = [
            sys.executable,
            "-m",
            "agentworld.testing.openai_wire_async",
            "--host",
            host,
            "--port",
            str(port),
            "--delay",
            repr(delay),
        ]
        self._process: subprocess.Popen[str] | None = None
        self._base_url = ""

    @property
    def base_url(self) -> str:
        """What to give the SDK as its ``base_url`` (ends in ``/v1``)."""
        if self._process is None:
            raise RuntimeError("server not started")
        return self._base_url

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("server not started")
        return self._process.pid

    def start(self) -> Self:
        if self._process is not None:
            return self
        process = subprocess.Popen(self._argv, stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("http://"):
            process.kill()
            process.wait()
            raise RuntimeError(f"loopback server did not start (exit {process.poll()})")
        self._process, self._base_url = process, line
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_process(process)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _control(self, method: str, path: str) -> Any:
        host, port = self.base_url.removeprefix("http://").split("/")[0].rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request(method, path)
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def stats(self) -> WireStats:
        """The server's counts (see :data:`WireStats`); a blocking loopback call."""
        return {key: int(value) for key, value in self._control("GET", "/_wire/stats").items()}

    def clear(self) -> None:
        """Zero the counts (open connections stay counted)."""
        self._control("POST", "/_wire/clear")

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far (Linux ``/proc``)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
