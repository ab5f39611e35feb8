"""A loopback TCP proxy between the browser and the server, so a test can cut the page's event
stream the way a network does — mid-answer, without the server or the page knowing — and keep
it cut for a while (new stream connections are accepted and closed at once, as a flaky network
does). Everything else passes through untouched."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator

EVENTS_MARK = b"/events"


class TcpProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._streams: list[tuple[socket.socket, socket.socket]] = []
        self._holding = threading.Event()
        self._closed = threading.Event()
        self.cuts = 0
        self._thread = threading.Thread(target=self._accept, daemon=True, name="tcp-proxy")
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            first = client.recv(65536)
        except OSError:
            client.close()
            return
        is_stream = _opens_stream(first)
        if is_stream and self._holding.is_set():
            _close(client)
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
        except OSError:
            client.close()
            return
        pair = (client, upstream)
        if is_stream:
            self._track(pair)
        upstream.sendall(first)
        threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()
        # A kept-alive connection may carry a stream request later: look at each request line.
        _pump(client, upstream, on_data=lambda data: self._on_request(pair, data))

    def _on_request(self, pair: tuple[socket.socket, socket.socket], data: bytes) -> None:
        if not _opens_stream(data):
            return
        if self._holding.is_set():
            _close(pair[0])
            _close(pair[1])
        else:
            self._track(pair)

    def _track(self, pair: tuple[socket.socket, socket.socket]) -> None:
        with self._lock:
            if pair not in self._streams:
                self._streams.append(pair)

    def cut_streams(self) -> int:
        """Cut every open event-stream connection now; returns how many were cut."""
        with self._lock:
            streams, self._streams = self._streams, []
        for client, upstream in streams:
            _close(client)
            _close(upstream)
        self.cuts += len(streams)
        return len(streams)

    @contextlib.contextmanager
    def streams_down(self) -> Iterator[None]:
        """Cut the event streams and refuse new ones until the block ends."""
        self._holding.set()
        self.cut_streams()
        try:
            yield
        finally:
            self._holding.clear()

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        self.cut_streams()


def _opens_stream(data: bytes) -> bool:
    return data.startswith(b"GET ") and EVENTS_MARK in data.split(b"\r\n", 1)[0]


def _pump(
    source: socket.socket, sink: socket.socket, on_data: Callable[[bytes], None] | None = None
) -> None:
    try:
        while data := source.recv(65536):
            if on_data is not None:
                on_data(data)
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _close(sink)
        _close(source)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
