"""Plumbing shared by the loopback wire servers (``openai_wire``, ``anthropic_wire``, ``gemini_wire``).

Each wire server is a :class:`LoopbackServer` (threaded HTTP server on a daemon
thread, connection tracking so :meth:`~LoopbackServer.stop` can cut idle
keep-alive connections, a FIFO reply queue in front of a responder, a log of
what arrived, and the counter behind made-up tool call ids) plus a
:class:`LoopbackHandler` subclass that only knows its provider's routes and
payload shapes. :func:`serve_forever_cli` is the shared
``python -m`` entry point. Stdlib only.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Generic, Literal, Protocol, Self, TypeVar, cast

__all__ = [
    "DropMode",
    "LoopbackHandler",
    "LoopbackServer",
    "pieces",
    "serve_forever_cli",
]

DropMode = Literal["cut", "end", "end_mid_event"]
"""How a stream scripted to stop early (``Reply.drop_stream_after``) stops.

* ``"cut"``: the socket is shut without the terminating chunk, so the HTTP client itself
  sees a broken body (a transport error);
* ``"end"``: the body ends properly between two events, so the HTTP layer sees nothing wrong
  and only the provider's own format tells the answer is incomplete (no ``finish_reason`` or
  ``[DONE]``, no ``message_stop``, no ``finishReason``);
* ``"end_mid_event"``: the first half of the next event is sent, then the body ends properly,
  as when a proxy that delimits the body by closing loses the upstream mid-event.

Either way the connection is closed afterwards (the stream is sent with ``Connection: close``).
"""


class _Delayed(Protocol):
    @property
    def delay(self) -> float: ...


class _ServerFactory(Protocol):
    """A wire server class: what :func:`serve_forever_cli` builds and runs."""

    def __call__(self, *, host: str, port: int) -> LoopbackServer[Any, Any]: ...


ReplyT = TypeVar("ReplyT", bound=_Delayed)
RecordT = TypeVar("RecordT")
OwnerT = TypeVar("OwnerT", bound="LoopbackServer[Any, Any]")


def pieces(text: str, size: int) -> list[str]:
    """``text`` in slices of ``size`` characters (at least one), as a stream would send it."""
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


class LoopbackHTTPServer(ThreadingHTTPServer):  # daemon handler threads by default
    owner: LoopbackServer[Any, Any]
    # socketserver's default backlog is 5: a burst of hundreds of new connections (1,000
    # concurrent chats) would be refused by the kernel, as no real API server would.
    request_queue_size = 1024


class LoopbackHandler(BaseHTTPRequestHandler, Generic[OwnerT]):
    """Keep-alive HTTP/1.1 handler with JSON and chunked-transfer helpers."""

    protocol_version = "HTTP/1.1"  # keep-alive, like the real API
    disable_nagle_algorithm = True  # else each keep-alive response waits ~40 ms on delayed ACK
    json_content_type = "application/json"
    server: LoopbackHTTPServer

    @property
    def owner(self) -> OwnerT:
        return cast(OwnerT, self.server.owner)

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

    # -- requests -----------------------------------------------------------------
    def _read_json(self) -> Any:
        """The request body parsed as JSON; ``None`` when empty or not JSON."""
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return None

    def _respond(
        self, body: dict[str, Any], prepare: Callable[[ReplyT], Callable[[], None]]
    ) -> None:
        """Answer ``body`` with the next scripted reply, after the reply's ``delay``.

        ``prepare`` turns the reply into the function that sends it. It runs before the
        delay, inside the same guard as the responder, so a buggy responder or script (say,
        tool arguments that are not JSON) fails this one request with a 500, not the server.
        """
        try:
            reply: ReplyT = self.owner._next_reply(body)
            send = prepare(reply)
        except Exception as exc:  # a buggy responder should fail the request, not the server
            self._send_error(500, f"responder raised {type(exc).__name__}: {exc}")
            return
        if reply.delay > 0 and self.owner._stopping.wait(reply.delay):
            return
        try:
            send()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # client gave up (e.g. timed out); nothing to tell it

    # -- whole responses ----------------------------------------------------------
    def _send_error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        """Send ``status`` with ``message`` in the provider's error body (each server's own)."""
        raise NotImplementedError

    def _json_headers(self, payload: Any) -> dict[str, str]:
        """Headers sent after Content-Length on every JSON response (hook)."""
        return {}

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", self.json_content_type)
        self.send_header("Content-Length", str(len(data)))
        for group in (self._json_headers(payload), headers or {}):
            for key, value in group.items():
                self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    # -- chunked responses ----------------------------------------------------------
    def _begin_chunked(
        self,
        content_type: str,
        *header_groups: dict[str, str],
        drop_at: int | None = None,
        no_cache: bool = False,
    ) -> None:
        """Start a 200 chunked body; ``drop_at`` is the stream's ``drop_stream_after``.

        A stream scripted to stop early is sent with ``Connection: close``, so the client
        never reuses the connection the server is about to close.
        """
        closing = {"Connection": "close"} if drop_at is not None else {}
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if no_cache:
            self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")  # framing that keeps keep-alive intact
        for group in (*header_groups, closing):
            for key, value in group.items():
                self.send_header(key, value)
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunked(self) -> None:
        self._chunk(b"")  # zero-length chunk terminates the body

    def _cut(self) -> None:
        """Drop the connection mid-body: no terminating chunk, so the client sees a cut stream."""
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def _send_chunks(
        self, chunks: Iterable[bytes], drop_at: int | None = None, drop: DropMode = "cut"
    ) -> None:
        """Write ``chunks`` and end the body, or stop the way ``drop`` says at chunk ``drop_at``."""
        for n, data in enumerate(chunks):
            if drop_at is not None and n >= drop_at:
                self._drop(data, drop)
                return
            self._chunk(data)
        self._end_chunked()

    def _drop(self, pending: bytes, drop: DropMode) -> None:
        """Stop a stream early instead of sending ``pending`` (see :data:`DropMode`)."""
        if drop == "cut":
            self._cut()
            return
        if drop == "end_mid_event":
            self._chunk(pending[: max(1, len(pending) // 2)])
        self._end_chunked()


class LoopbackServer(Generic[ReplyT, RecordT]):
    """A scriptable loopback HTTP server answering with ``handler`` on a daemon thread.

    Replies come from the FIFO queue filled by :meth:`enqueue` first, then from
    ``responder``. Each request's body is kept with a ``RecordT`` of what else it
    brought (its path, its headers...) via :meth:`_record`: :attr:`requests` lists the
    bodies, and subclasses expose the records through their own properties.
    """

    base_path: ClassVar[str] = ""
    """What follows the origin in :attr:`base_url`: the part of the API's path that
    the SDK expects in its ``base_url`` rather than appending itself."""

    def __init__(
        self,
        handler: type[LoopbackHandler[Any]],
        responder: Callable[[dict[str, Any]], ReplyT],
        host: str,
        port: int,
    ) -> None:
        self._handler = handler
        self._responder = responder
        self._host, self._port = host, port
        self._lock = threading.Lock()
        self._log: list[tuple[Any, RecordT]] = []
        self._queue: deque[ReplyT] = deque()
        self._serials = itertools.count(1)
        self._conns: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._httpd: LoopbackHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _origin(self) -> str:
        """``http://host:port`` of the running server."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """What to give the SDK as its ``base_url``."""
        return self._origin() + self.base_path

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON object bodies received, oldest first (a copy)."""
        return [body for body, _ in self._snapshot() if isinstance(body, dict)]

    def enqueue(self, *replies: ReplyT) -> None:
        with self._lock:
            self._queue.extend(replies)

    def clear(self) -> None:
        with self._lock:
            self._log.clear()
            self._queue.clear()

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = LoopbackHTTPServer((self._host, self._port), self._handler)
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- called from handler threads ---------------------------------------------
    def _snapshot(self) -> list[tuple[Any, RecordT]]:
        with self._lock:
            return list(self._log)

    def _records(self) -> list[RecordT]:
        return [record for _, record in self._snapshot()]

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def _record(self, body: Any, record: RecordT) -> None:
        with self._lock:
            self._log.append((body, record))

    def _ids_for(self, given: Iterable[str | None], fresh: Callable[[int], str]) -> list[str]:
        """Each ``given`` id, or ``fresh(n)`` where it is missing, ``n`` counting 1, 2, ...
        over the server's life; numbered under the lock, so one reply's ids are consecutive."""
        with self._lock:
            return [given_id or fresh(next(self._serials)) for given_id in given]

    def _next_reply(self, body: dict[str, Any]) -> ReplyT:
        with self._lock:
            queued = self._queue.popleft() if self._queue else None
        return queued if queued is not None else self._responder(body)


def serve_forever_cli(
    server_factory: _ServerFactory, description: str | None, argv: list[str] | None = None
) -> None:
    """Run ``server_factory(host=, port=)`` with its default (echo) responder until
    SIGTERM/SIGINT; the first stdout line is the base URL. This is each wire module's
    ``python -m`` entry point.

    ``description`` may be a whole module docstring: its first line is the ``--help`` text.
    """
    summary = description.splitlines()[0] if description else None
    parser = argparse.ArgumentParser(description=summary)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)

    def _terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # unwind through the finally below, like Ctrl-C

    signal.signal(signal.SIGTERM, _terminate)
    server = server_factory(host=args.host, port=args.port).start()
    try:
        print(server.base_url, flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass  # normal shutdown: exit status 0
    finally:
        server.stop()
