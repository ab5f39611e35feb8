"""Loopback HTTP server speaking the real Gemini API (``generativelanguage``) wire format.

The Gemini sibling of :mod:`agentworld.testing.openai_wire`: tests point the
official ``google-genai`` SDK at :attr:`GeminiWireServer.base_url` and script
the answers with the same :class:`Reply` / :class:`ToolCallSpec` values, so one
script drives every provider alike. What differs is Gemini's shape:

* ``POST /{version}/models/{model}:generateContent`` answers one
  ``GenerateContentResponse``; ``:streamGenerateContent?alt=sse`` answers SSE
  ``data:`` events, each a whole ``GenerateContentResponse``. Text is split
  across events, a ``functionCall`` arrives whole in one event, and the last
  event carries ``finishReason`` and the final ``usageMetadata``.
* Function calls carry ``args`` as a JSON object and usually no ``id``:
  ``ToolCallSpec.id=None`` sends none (unlike the OpenAI server, which makes one up).
* Errors are ``{"error": {"code", "message", "status"}}`` with a gRPC status name.
* With ``api_key`` set, a request with another key gets Gemini's answer to a bad
  key: **400** ``INVALID_ARGUMENT`` with reason ``API_KEY_INVALID`` (not a 401).

Stdlib only; runs as a process too: ``python -m agentworld.testing.gemini_wire``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import socket
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentworld.testing.openai_wire import Reply, Responder, ToolCallSpec

__all__ = ["GeminiWireServer", "ReceivedRequest", "Reply", "ToolCallSpec", "echo_responder"]

_GRPC_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
_GRPC_STATUS |= {404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED"}
_GRPC_STATUS |= {500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE"}
_GRPC_STATUS |= {504: "DEADLINE_EXCEEDED"}
_ROUTE = re.compile(r"^/(?P<version>v\d+\w*)/models/(?P<model>[^/:]+):(?P<method>\w+)$")
_LIST = re.compile(r"^/(?P<version>v\d+\w*)/models$")


@dataclass(frozen=True)
class ReceivedRequest:
    """What arrived besides the body: tests assert on the URL the SDK built and the key."""

    method: str  # "generateContent" | "streamGenerateContent" | ...
    path: str  # with the query string, e.g. "/v1beta/models/m:streamGenerateContent?alt=sse"
    version: str  # "v1beta"
    model: str
    api_key: str | None  # the x-goog-api-key header (or ?key=)
    body: Any


def _texts(content: Any) -> list[str]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [
        p["text"] for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str)
    ]


def echo_responder(body: dict[str, Any]) -> Reply:
    """Default behaviour: answer ``echo: <text of the last user content>``."""
    users = [
        c for c in body.get("contents") or [] if isinstance(c, dict) and c.get("role") == "user"
    ]
    return Reply.text("echo: " + (" ".join(_texts(users[-1])) if users else ""))


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    prompt = reply.prompt_tokens
    if prompt is None:
        contents = [*(body.get("contents") or []), body.get("systemInstruction")]
        prompt = sum(len(t.split()) for c in contents for t in _texts(c))
    completion = reply.completion_tokens
    if completion is None:
        texts = [reply.content or "", *(t.arguments for t in reply.tool_calls)]
        completion = sum(len(t.split()) for t in texts)
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": completion}
    return usage | {"totalTokenCount": prompt + completion}


def _function_call(spec: ToolCallSpec) -> dict[str, Any]:
    args = json.loads(spec.arguments or "{}")
    if not isinstance(args, dict):
        raise ValueError(f"Gemini function-call args must be a JSON object, got {spec.arguments!r}")
    call: dict[str, Any] = {"name": spec.name, "args": args}
    if spec.id is not None:
        call["id"] = spec.id
    return {"functionCall": call}


def _response(
    parts: list[dict[str, Any]], usage: dict[str, int], model: str, rid: str, *, last: bool
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if last:
        candidate["finishReason"] = "STOP"  # Gemini says STOP after function calls too
    candidate["index"] = 0
    return {"candidates": [candidate], "usageMetadata": usage} | {
        "modelVersion": model,  # Gemini names the exact model version that answered
        "responseId": rid,
    }


def _whole(body: dict[str, Any], reply: Reply, model: str) -> dict[str, Any]:
    """The ``generateContent`` answer: one response with every part."""
    calls = [_function_call(spec) for spec in reply.tool_calls]
    text = [{"text": reply.content or ""}] if reply.content or not calls else []
    return _response(text + calls, _usage(body, reply), model, _response_id(), last=True)


def _events(body: dict[str, Any], reply: Reply, model: str) -> list[dict[str, Any]]:
    """The ``streamGenerateContent`` answer: text split across chunks, each call whole."""
    rid, final = _response_id(), _usage(body, reply)
    # Gemini repeats the prompt count on every chunk; the output count is final only at the end.
    running = {"promptTokenCount": final["promptTokenCount"]}
    running["totalTokenCount"] = final["promptTokenCount"]
    parts = [{"text": piece} for piece in _pieces(reply.content or "", reply.chunk_size)]
    parts += [_function_call(spec) for spec in reply.tool_calls]
    parts = parts or [{"text": ""}]
    last = len(parts) - 1
    return [
        _response([part], final if i == last else running, model, rid, last=i == last)
        for i, part in enumerate(parts)
    ]


def _response_id() -> str:
    return uuid.uuid4().hex[:22]


_KEY_INVALID = {
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    "reason": "API_KEY_INVALID",
    "domain": "googleapis.com",
    "metadata": {"service": "generativelanguage.googleapis.com"},
}


class _HTTPServer(ThreadingHTTPServer):  # daemon handler threads by default
    owner: GeminiWireServer


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
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        code = _GRPC_STATUS.get(status, "INTERNAL" if status >= 500 else "UNKNOWN")
        error: dict[str, Any] = {"code": status, "message": message, "status": code}
        if details:
            error["details"] = details
        self._send_json(status, {"error": error}, headers)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # -- routes -------------------------------------------------------------------
    def do_GET(self) -> None:
        if _LIST.match(self.path.split("?")[0]) is None:
            self._send_error(404, f"Unknown path {self.path}")
            return
        methods = ["generateContent", "streamGenerateContent"]
        model = {"name": "models/wire-test", "supportedGenerationMethods": methods}
        self._send_json(200, {"models": [model]})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        owner = self.server.owner
        route = _ROUTE.match(self.path.split("?")[0])
        if route is None:
            self._send_error(404, f"Unknown path {self.path}")
            return
        method, model = route["method"], route["model"]
        query_key = re.search(r"[?&]key=([^&]+)", self.path)
        key = self.headers.get("x-goog-api-key") or (query_key[1] if query_key else None)
        owner._record(ReceivedRequest(method, self.path, route["version"], model, key, body))
        if method not in ("generateContent", "streamGenerateContent"):
            self._send_error(404, f"Method {method} is not served here.")
            return
        if owner.api_key is not None and key != owner.api_key:
            self._send_error(
                400, "API key not valid. Please pass a valid API key.", None, [_KEY_INVALID]
            )
            return
        if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
            self._send_error(400, "* GenerateContentRequest.contents: contents is not specified")
            return
        try:
            reply = owner._next_reply(body)
            events = _events(body, reply, model)
        except Exception as exc:  # a buggy responder should fail the request, not the server
            self._send_error(500, f"responder raised {type(exc).__name__}: {exc}")
            return
        if reply.delay > 0 and owner._stopping.wait(reply.delay):
            return
        try:
            if reply.status != 200:
                self._send_error(reply.status, reply.error_message or "error", reply.headers)
            elif method == "streamGenerateContent":
                self._stream(events, reply)
            else:
                self._send_json(200, _whole(body, reply, model), reply.headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # client gave up (e.g. timed out); nothing to tell it

    def _stream(self, events: list[dict[str, Any]], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")  # framing that keeps keep-alive intact
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        for n, event in enumerate(events):
            if reply.drop_stream_after is not None and n >= reply.drop_stream_after:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)  # no terminating chunk: a cut stream
                self.close_connection = True
                return
            self._chunk(f"data: {json.dumps(event)}\r\n\r\n".encode())
        self._chunk(b"")  # zero-length chunk terminates the body


class GeminiWireServer:
    """A scriptable fake of Gemini's ``generateContent`` / ``streamGenerateContent``.

    Replies come from the FIFO queue filled by :meth:`enqueue` first, then from
    ``responder`` (default: :func:`echo_responder`), which receives the JSON
    body. :attr:`requests` keeps every JSON body; :attr:`received` adds the
    method, path, model and API key of each.
    """

    def __init__(
        self,
        *,
        responder: Responder | None = None,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._responder = responder or echo_responder
        self.api_key = api_key
        """When set, any other key is refused the way Gemini refuses a bad key."""
        self._host, self._port = host, port
        self._lock = threading.Lock()
        self._received: list[ReceivedRequest] = []
        self._queue: deque[Reply] = deque()
        self._conns: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """For ``HttpOptions(base_url=...)``; the SDK appends ``{api_version}/models/...``."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the generate requests, oldest first (a copy)."""
        with self._lock:
            return [r.body for r in self._received if isinstance(r.body, dict)]

    @property
    def received(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self._received)

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def clear(self) -> None:
        with self._lock:
            self._received.clear()
            self._queue.clear()

    def start(self) -> GeminiWireServer:
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

    def __enter__(self) -> GeminiWireServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- called from handler threads ---------------------------------------------
    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _record(self, received: ReceivedRequest) -> None:
        with self._lock:
            self._received.append(received)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            queued = self._queue.popleft() if self._queue else None
        return queued if queued is not None else self._responder(body)


def main(argv: list[str] | None = None) -> None:
    """Serve the echo responder until SIGTERM/SIGINT; first stdout line is the base URL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)

    def _terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # unwind through the finally below, like Ctrl-C

    signal.signal(signal.SIGTERM, _terminate)
    server = GeminiWireServer(host=args.host, port=args.port).start()
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
