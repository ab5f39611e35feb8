"""Loopback HTTP server speaking the real OpenAI chat-completions wire format.

Why: fakes that stub the SDK's Python objects never exercise what production
exercises - HTTP framing, SSE parsing, tool-call delta reassembly, typed error
mapping, retries and keep-alive.  This server lets tests and benchmarks point the
*official* ``openai`` SDK at ``base_url`` and script exactly what comes back.
Stdlib only, so it can ship with the library and run as a separate process::

    python -m agentworld.testing.openai_wire [--port N]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import signal
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["OpenAIWireServer", "Reply", "Responder", "ToolCallSpec", "echo_responder"]

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}
_ERROR_TYPES |= {404: "not_found_error", 429: "rate_limit_exceeded"}


@dataclass(frozen=True)
class ToolCallSpec:
    """One scripted tool call; ``arguments`` is JSON text, exactly as OpenAI sends it."""

    name: str
    arguments: str
    id: str | None = None  # None -> the server assigns a unique "call_<n>"


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Non-200 ``status`` turns it into an OpenAI-shaped error."""

    content: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    status: int = 200
    error_message: str = ""
    prompt_tokens: int | None = None  # None -> word count of the request messages
    completion_tokens: int | None = None  # None -> word count of content + arguments
    chunk_size: int = 4  # characters per streamed content / arguments delta
    headers: dict[str, str] = field(default_factory=dict)  # e.g. {"retry-after": "0"}
    delay: float = 0.0  # seconds to wait before answering (timeout tests)
    drop_stream_after: int | None = None  # streaming: cut the socket after N data events

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def tools(cls, *specs: ToolCallSpec, content: str | None = None, **kw: Any) -> Reply:
        return cls(content=content, tool_calls=tuple(specs), **kw)

    @classmethod
    def error(cls, status: int, message: str, **kw: Any) -> Reply:
        return cls(status=status, error_message=message, **kw)


Responder = Callable[[dict[str, Any]], Reply]


def _text_of(content: Any) -> str:
    """Flatten a message ``content`` (string or list of typed parts) to plain text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def echo_responder(body: dict[str, Any]) -> Reply:
    """Default behaviour: answer ``echo: <last user message>``."""
    users = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    return Reply.text("echo: " + (_text_of(users[-1].get("content")) if users else ""))


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


class _HTTPServer(ThreadingHTTPServer):  # daemon handler threads (ThreadingHTTPServer default)
    owner: OpenAIWireServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real API
    disable_nagle_algorithm = True  # else each keep-alive response waits ~40 ms on delayed ACK
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests should stay quiet

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    # -- plumbing -----------------------------------------------------------------
    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
        err = {"message": message, "type": kind, "param": None, "code": kind}
        self._send_json(status, {"error": err}, headers)

    # -- routes -------------------------------------------------------------------
    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": "wire-test", "object": "model", "created": 0, "owned_by": "agentworld"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_error(404, f"Unknown path {self.path}")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        owner = self.server.owner
        if isinstance(body, dict):
            owner._record(body, self.path)
        path = self.path.split("?")[0].rstrip("/")
        # Azure OpenAI addresses a deployment: .../deployments/<name>/chat/completions?api-version=
        if path != "/v1/chat/completions" and not re.fullmatch(r".*/deployments/[^/]+/chat/completions", path):
            self._send_error(404, f"Unknown path {self.path}")
            return
        if not isinstance(body, dict) or "model" not in body or "messages" not in body:
            self._send_error(400, "Request body must be a JSON object with 'model' and 'messages'.")
            return
        try:
            reply = owner._next_reply(body)
        except Exception as exc:  # a buggy responder should fail the request, not the server
            self._send_error(500, f"responder raised {type(exc).__name__}: {exc}")
            return
        if reply.delay > 0 and owner._stopping.wait(reply.delay):
            return
        try:
            if reply.status != 200:
                self._send_error(reply.status, reply.error_message or "error", reply.headers)
            elif body.get("stream"):
                self._stream(body, reply, owner._call_ids(reply))
            else:
                self._complete(body, reply, owner._call_ids(reply))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # client gave up (e.g. timed out); nothing to tell it

    def _complete(self, body: dict[str, Any], reply: Reply, ids: list[str]) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if reply.tool_calls:
            pairs = zip(ids, reply.tool_calls, strict=True)
            fns = [(cid, {"name": t.name, "arguments": t.arguments}) for cid, t in pairs]
            message["tool_calls"] = [{"id": i, "type": "function", "function": f} for i, f in fns]
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}
        payload = _envelope(body, "chat.completion")
        payload |= {"choices": [choice], "usage": _usage(body, reply)}
        self._send_json(200, payload, reply.headers)

    def _stream(self, body: dict[str, Any], reply: Reply, ids: list[str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")  # framing that keeps keep-alive intact
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        for n, event in enumerate(_events(body, reply, ids)):
            if reply.drop_stream_after is not None and n >= reply.drop_stream_after:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)  # no terminating chunk: a cut stream
                self.close_connection = True
                return
            self._chunk(f"data: {event}\n\n".encode())
        self._chunk(b"")  # zero-length chunk terminates the body

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _envelope(body: dict[str, Any], obj: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": obj,
        "created": int(time.time()),
        "model": body.get("model"),
        "system_fingerprint": "fp_agentworld",
    }


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    prompt = reply.prompt_tokens
    if prompt is None:
        msgs = body.get("messages") or []
        prompt = sum(len(_text_of(m.get("content")).split()) for m in msgs if isinstance(m, dict))
    completion = reply.completion_tokens
    if completion is None:
        texts = [reply.content or "", *(t.arguments for t in reply.tool_calls)]
        completion = sum(len(t.split()) for t in texts)
    total = prompt + completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def _events(body: dict[str, Any], reply: Reply, ids: list[str]) -> Iterator[str]:
    """Yield the SSE ``data`` payloads of a streamed answer, ending with ``[DONE]``."""
    base = _envelope(body, "chat.completion.chunk")  # one id for every chunk, as OpenAI does
    with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    if with_usage:
        base["usage"] = None  # OpenAI sends usage: null on every chunk but the last

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return json.dumps(base | {"choices": [choice]})

    # Real API: content "" for text answers, null when the answer is tool calls only.
    yield chunk({"role": "assistant", "content": "" if reply.content is not None else None})
    for piece in _pieces(reply.content or "", reply.chunk_size):
        yield chunk({"content": piece})
    for i, (cid, spec) in enumerate(zip(ids, reply.tool_calls, strict=True)):
        head = {"index": i, "id": cid, "type": "function"}
        yield chunk({"tool_calls": [head | {"function": {"name": spec.name, "arguments": ""}}]})
        for frag in _pieces(spec.arguments, reply.chunk_size):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]})
    yield chunk({}, _finish(reply))
    if with_usage:
        yield json.dumps(base | {"choices": [], "usage": _usage(body, reply)})
    yield "[DONE]"


class OpenAIWireServer:
    """A scriptable fake of ``POST /v1/chat/completions`` on a loopback port.

    Replies come from the FIFO queue filled by :meth:`enqueue` first, then from
    ``responder`` (default: :func:`echo_responder`). Every JSON body received is
    kept in :attr:`requests` so tests can assert on what the SDK actually sent.
    """

    def __init__(
        self, *, responder: Responder | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self._responder = responder or echo_responder
        self._host, self._port = host, port
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._paths: list[str] = []
        self._queue: deque[Reply] = deque()
        self._ids = itertools.count(1)
        self._conns: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    @property
    def paths(self) -> list[str]:
        """The request path (with query) of each recorded request, parallel to ``requests``."""
        with self._lock:
            return list(self._paths)

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._paths.clear()
            self._queue.clear()

    def start(self) -> OpenAIWireServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer((self._host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and cut idle keep-alive connections so nothing leaks past a test."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wakes handlers sleeping on Reply.delay
        httpd.shutdown()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):  # unblocks handler threads stuck in readline
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OpenAIWireServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- called from handler threads ---------------------------------------------
    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _record(self, body: dict[str, Any], path: str) -> None:
        with self._lock:
            self._requests.append(body)
            self._paths.append(path)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            queued = self._queue.popleft() if self._queue else None
        return queued if queued is not None else self._responder(body)

    def _call_ids(self, reply: Reply) -> list[str]:
        with self._lock:
            return [t.id or f"call_{next(self._ids)}" for t in reply.tool_calls]


def main(argv: list[str] | None = None) -> None:
    """Serve the echo responder until SIGTERM/SIGINT; first stdout line is the base URL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)

    def _terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # unwind through the finally below, like Ctrl-C

    signal.signal(signal.SIGTERM, _terminate)
    server = OpenAIWireServer(host=args.host, port=args.port).start()
    try:
        print(server.base_url, flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass  # normal shutdown: exit status 0
    finally:
        server.stop()


if __name__ == "__main__":
    main()
