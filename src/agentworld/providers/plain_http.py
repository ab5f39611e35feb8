"""A lean HTTP/1.1 transport for the SDK's client when the endpoint is a plain ``http://`` URL.

Local model servers (Ollama, vLLM, llama.cpp, a loopback test server) speak plain HTTP/1.1.
The SDK's default transport (``httpcore2`` with ``h11``) costs a fresh process 58 ms to import
(``h11`` compiles its header grammar), and under load its pool walks every connection and
probes the socket of each idle one on every request. This transport is what such an endpoint
needs and nothing more: HTTP/1.1 over asyncio, keep-alive connections reused last-in first-out,
``Content-Length``, chunked and read-to-close bodies, and the SDK's timeouts.

What it refuses, so that it fails closed rather than guess:

* any URL that is not ``http://`` (a redirect to ``https://`` fails; it never speaks TLS);
* a response it cannot read with certainty: a malformed status line or header, a header
  section over 64 KiB, a ``Transfer-Encoding`` other than ``chunked``, conflicting
  ``Content-Length`` values, a body cut short; each is ``RemoteProtocolError``;
* request headers holding CR, LF or NUL (a header could smuggle another);
* an idle connection that received anything (bytes or the peer's close) is never reused:
  what it holds cannot be the answer to the next request.

Proxies are not its job: with a proxy variable in the environment, :func:`is_plain_http_endpoint`
says no and ``pooled_http_client`` keeps the SDK's transport, which honours them.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import nullcontext
from typing import Literal

import httpx2

MAX_HEAD_BYTES = 64 * 1024
"""The longest status line plus headers (and the longest chunk-size line) a response may send."""
MAX_BUFFERED = 256 * 1024
"""Bytes buffered from one connection before reading pauses until the reader catches up."""
KEEPALIVE_EXPIRY = 5.0
"""Seconds an idle connection is kept for reuse (the SDK's default transport keeps 5 too)."""

BodyFraming = Literal["none", "length", "chunked", "close"]
_NO_BODY_STATUSES = frozenset({204, 304})
_FORBIDDEN_IN_HEADERS = (b"\r", b"\n", b"\0")


def is_plain_http_endpoint(base_url: str | None) -> bool:
    """Whether requests to ``base_url`` go straight to it over plain HTTP: an ``http://`` URL,
    and no ``HTTP_PROXY`` or ``ALL_PROXY`` variable (any case) in the environment. With one,
    the SDK's transport decides, ``NO_PROXY`` included, exactly as it always did."""
    if base_url is None or not base_url.lower().startswith("http://"):
        return False
    return not any(
        value and name.lower() in ("http_proxy", "all_proxy") for name, value in os.environ.items()
    )


class _Wire(asyncio.Protocol):
    """One TCP connection's incoming bytes, whether the peer has closed it, and write flow
    control: the small part of asyncio streams this transport needs, with its buffer in view
    (an idle connection holding anything is not reused)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.closed = False
        self._waiter: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > MAX_BUFFERED and self.transport is not None:
            self.transport.pause_reading()
            self._paused = True
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def write(self, data: bytes) -> None:
        if self.closed or self.transport is None or self.transport.is_closing():
            raise httpx2.WriteError("the connection was closed before the request was sent")
        self.transport.write(data)
        if self._writable is not None:
            await self._writable
            if self.closed:
                raise httpx2.WriteError("the connection was closed while the request was sent")

    async def _more(self) -> None:
        """Wait until more bytes arrived or the peer closed."""
        if self._paused and self.transport is not None:
            self.transport.resume_reading()
            self._paused = False
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _take(self, n: int) -> bytes:
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    async def read_until(self, separator: bytes, timeout: float | None, what: str) -> bytes:
        """Bytes up to and including ``separator``, at most :data:`MAX_HEAD_BYTES` of them."""
        searched = 0
        while True:
            found = self.buffer.find(separator, searched)
            if found >= 0 and found + len(separator) <= MAX_HEAD_BYTES:
                return self._take(found + len(separator))
            if found >= 0 or len(self.buffer) > MAX_HEAD_BYTES:
                raise httpx2.RemoteProtocolError(
                    f"the {what} is longer than {MAX_HEAD_BYTES} bytes"
                )
            if self.closed:
                raise _cut_short(what, received=bool(self.buffer))
            searched = max(0, len(self.buffer) - len(separator) + 1)
            await self._more_within(timeout)

    async def read_some(self, limit: int, timeout: float | None) -> bytes:
        """Up to ``limit`` bytes, waiting for at least one; ``b""`` once the peer closed."""
        while not self.buffer:
            if self.closed:
                return b""
            await self._more_within(timeout)
        return self._take(limit)

    async def read_exactly(self, n: int, timeout: float | None, what: str) -> bytes:
        while len(self.buffer) < n:
            if self.closed:
                raise _cut_short(what, received=True)
            await self._more_within(timeout)
        return self._take(n)

    async def _more_within(self, timeout: float | None) -> None:
        try:
            async with asyncio.timeout(timeout) if timeout is not None else nullcontext():
                await self._more()
        except TimeoutError:
            raise httpx2.ReadTimeout(f"no answer from the server within {timeout:g} s") from None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.closed = True


def _cut_short(what: str, *, received: bool) -> httpx2.RemoteProtocolError:
    if what == "response head" and not received:
        return httpx2.RemoteProtocolError("the server disconnected without sending a response")
    return httpx2.RemoteProtocolError(
        f"the server closed the connection in the middle of the {what}"
    )


class _Connection:
    __slots__ = ("wire", "idle_since")

    def __init__(self, wire: _Wire) -> None:
        self.wire = wire
        self.idle_since = 0.0

    def untouched(self) -> bool:
        """Open, and nothing arrived since the last response was read."""
        wire = self.wire
        return (
            not wire.closed
            and not wire.buffer
            and wire.transport is not None
            and not wire.transport.is_closing()
        )


class PlainHTTPTransport(httpx2.AsyncBaseTransport):
    """At most ``max_connections`` requests on the wire at once, to plain ``http://`` origins;
    the others wait their turn (for ``pool`` seconds of the request's timeout, if set)."""

    def __init__(self, *, max_connections: int) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self.max_connections = max_connections
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closer: asyncio.Task[None] | None = None
        self._closed = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx2.UnsupportedProtocol(
                f"refusing {url.scheme}:// ({url.host}): this client speaks plain HTTP only"
            )
        if self._closed:
            raise httpx2.ConnectError("the HTTP client is closed")
        self._bind_to_running_loop()
        timeouts = request.extensions.get("timeout", {})
        head = _request_head(request)
        body = await request.aread()
        if "chunked" in request.headers.get("transfer-encoding", "").lower():
            body = (b"%x\r\n%b\r\n0\r\n\r\n" % (len(body), body)) if body else b"0\r\n\r\n"
        await self._acquire(timeouts.get("pool"))
        connection: _Connection | None = None
        try:
            origin = (url.host, url.port or 80)
            connection = self._take_idle(origin) or await _connect(origin, timeouts.get("connect"))
            wire = connection.wire
            await _within(timeouts.get("write"), wire.write(head + body), httpx2.WriteTimeout)
            status, reason, version, headers = await _read_head(wire, timeouts.get("read"))
            framing, length = _body_framing(request.method, status, headers)
            keep_alive = version == b"HTTP/1.1" and not _has_token(headers, b"connection", b"close")
            if framing == "close" or (framing == "chunked" and _header(headers, b"content-length")):
                keep_alive = False  # both framings at once: never trust the connection again
            stream = _ResponseBody(
                self, origin, connection, framing, length, keep_alive, timeouts.get("read")
            )
        except BaseException:
            if connection is not None:
                connection.wire.close()
            self._slots.release()
            raise
        return httpx2.Response(
            status,
            headers=headers,
            stream=stream,
            extensions={"http_version": version, "reason_phrase": reason},
        )

    def _bind_to_running_loop(self) -> None:
        """Connections and the wait for one belong to the event loop that made them. A client
        used again under a new loop (``asyncio.run`` twice) starts afresh there; the old loop's
        idle connections were closed by :meth:`_close_idle_when_the_loop_ends` as it ended."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._close_idle()
            self._loop = loop
            self._slots = asyncio.Semaphore(self.max_connections)
            self._closer = loop.create_task(
                self._close_idle_when_the_loop_ends(), name="agentworld-http-idle-closer"
            )

    async def _close_idle_when_the_loop_ends(self) -> None:
        """Waits, doing nothing, until cancelled: ``asyncio.run`` (and any ``asyncio.Runner``)
        cancels the tasks left when its main coroutine returns, while the loop can still close
        sockets. Without it, a client not closed in its loop would leave its idle connections
        open for the garbage collector to find (and warn about)."""
        try:
            await asyncio.Event().wait()
        finally:
            self._close_idle()

    def _close_idle(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.wire.close()
        self._idle.clear()

    async def _acquire(self, timeout: float | None) -> None:
        try:
            async with asyncio.timeout(timeout) if timeout is not None else nullcontext():
                await self._slots.acquire()
        except TimeoutError:
            raise httpx2.PoolTimeout(f"no free connection within {timeout:g} s") from None

    def _take_idle(self, origin: tuple[str, int]) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if connection.untouched() and now - connection.idle_since < KEEPALIVE_EXPIRY:
                return connection
            connection.wire.close()
        return None

    def release(self, origin: tuple[str, int], connection: _Connection, *, reuse: bool) -> None:
        """Called once per response, when its body was read to the end or abandoned."""
        self._slots.release()
        if reuse and not self._closed and connection.untouched():
            connection.idle_since = time.monotonic()
            self._idle.setdefault(origin, []).append(connection)
        else:
            connection.wire.close()

    async def aclose(self) -> None:
        self._closed = True
        self._close_idle()
        if self._closer is not None and self._loop is asyncio.get_running_loop():
            self._closer.cancel()


class _ResponseBody(httpx2.AsyncByteStream):
    """A response's body as it arrives; closing it hands the connection back (kept alive only
    when the body was read whole and the response allowed it)."""

    def __init__(
        self,
        transport: PlainHTTPTransport,
        origin: tuple[str, int],
        connection: _Connection,
        framing: BodyFraming,
        length: int,
        keep_alive: bool,
        read_timeout: float | None,
    ) -> None:
        self._transport = transport
        self._origin = origin
        self._connection = connection
        self._framing = framing
        self._length = length
        self._keep_alive = keep_alive
        self._timeout = read_timeout
        self._complete = framing == "none"
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        wire = self._connection.wire
        if self._framing == "length":
            remaining = self._length
            while remaining:
                data = await wire.read_some(min(remaining, MAX_BUFFERED), self._timeout)
                if not data:
                    raise _cut_short("response body", received=True)
                remaining -= len(data)
                yield data
        elif self._framing == "chunked":
            async for data in _chunks(wire, self._timeout):
                yield data
        elif self._framing == "close":
            while data := await wire.read_some(MAX_BUFFERED, self._timeout):
                yield data
        self._complete = True

    async def aclose(self) -> None:
        if self._released:
            return
        self._released = True
        self._transport.release(
            self._origin, self._connection, reuse=self._complete and self._keep_alive
        )


async def _chunks(wire: _Wire, timeout: float | None) -> AsyncIterator[bytes]:
    while True:
        line = await wire.read_until(b"\r\n", timeout, "chunk size")
        size_text = line[:-2].split(b";", 1)[0].strip()
        if not size_text or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
            raise httpx2.RemoteProtocolError(f"malformed chunk size {bytes(size_text)!r}")
        size = int(size_text, 16)
        if size == 0:
            while await wire.read_until(b"\r\n", timeout, "chunk trailer") != b"\r\n":
                pass
            return
        data = await wire.read_exactly(size + 2, timeout, "response body")
        if not data.endswith(b"\r\n"):
            raise httpx2.RemoteProtocolError("a chunk does not end where its size says")
        yield data[:-2]


async def _connect(origin: tuple[str, int], timeout: float | None) -> _Connection:
    loop = asyncio.get_running_loop()
    host, port = origin
    try:
        async with asyncio.timeout(timeout) if timeout is not None else nullcontext():
            _, wire = await loop.create_connection(_Wire, host, port)
    except TimeoutError:
        raise httpx2.ConnectTimeout(
            f"cannot connect to {host}:{port} within {timeout:g} s"
        ) from None
    except OSError as exc:
        raise httpx2.ConnectError(f"cannot connect to {host}:{port}: {exc}") from exc
    return _Connection(wire)


async def _within(
    timeout: float | None, step: Awaitable[None], error: type[httpx2.TimeoutException]
) -> None:
    try:
        async with asyncio.timeout(timeout) if timeout is not None else nullcontext():
            await step
    except TimeoutError:
        raise error(f"the request could not be sent within {timeout:g} s") from None


def _request_head(request: httpx2.Request) -> bytes:
    target = request.url.raw_path or b"/"
    raw = request.headers.raw
    names = b"".join(name for name, _ in raw)
    written = b"".join(name + value for name, value in raw) + target
    if b":" in names or b" " in names + target or any(c in written for c in _FORBIDDEN_IN_HEADERS):
        bad = next(
            name
            for name, value in [*raw, (b"request target", target)]
            if b":" in name or b" " in name or any(c in name + value for c in _FORBIDDEN_IN_HEADERS)
        )
        raise httpx2.LocalProtocolError(
            f"refusing to send {bad[:40]!r}: it holds a line break, a NUL or a misplaced colon"
        )
    lines = [b"%s %s HTTP/1.1\r\n" % (request.method.encode("ascii"), target)]
    lines.extend(b"%s: %s\r\n" % (name, value) for name, value in raw)
    lines.append(b"\r\n")
    return b"".join(lines)


async def _read_head(
    wire: _Wire, timeout: float | None
) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]]]:
    """The final response's status, reason, version and headers (1xx interim answers skipped)."""
    while True:
        head = await wire.read_until(b"\r\n\r\n", timeout, "response head")
        lines = head[:-4].split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        bare_break = b"\n" in lines[0] or b"\r" in lines[0] or b"\0" in lines[0]
        if len(parts) < 2 or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0") or bare_break:
            raise httpx2.RemoteProtocolError(f"malformed status line {lines[0][:80]!r}")
        if len(parts[1]) != 3 or not parts[1].isdigit():
            raise httpx2.RemoteProtocolError(f"malformed status code {parts[1][:10]!r}")
        status = int(parts[1])
        headers = [_header_line(line) for line in lines[1:]]
        if status == 101:
            raise httpx2.RemoteProtocolError(
                "the server switched protocols, which was not asked for"
            )
        if status >= 200:
            return status, parts[2] if len(parts) == 3 else b"", parts[0], headers


def _header_line(line: bytes) -> tuple[bytes, bytes]:
    name, colon, value = line.partition(b":")
    if not colon or not name or name != name.strip() or b" " in name or b"\t" in name:
        raise httpx2.RemoteProtocolError(f"malformed response header {line[:80]!r}")
    if b"\0" in value or b"\r" in value or b"\n" in value:
        raise httpx2.RemoteProtocolError(
            f"a NUL or a bare line break in response header {name[:40]!r}"
        )
    return name, value.strip(b" \t")


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    return [value for key, value in headers if key.lower() == name]


def _has_token(headers: list[tuple[bytes, bytes]], name: bytes, token: bytes) -> bool:
    return any(
        part.strip().lower() == token
        for value in _header(headers, name)
        for part in value.split(b",")
    )


def _body_framing(
    method: str, status: int, headers: list[tuple[bytes, bytes]]
) -> tuple[BodyFraming, int]:
    """How the body is delimited (RFC 9112 §6.3), or ``RemoteProtocolError`` when unsure."""
    if method == "HEAD" or status in _NO_BODY_STATUSES:
        return "none", 0
    codings = [
        c.strip().lower() for v in _header(headers, b"transfer-encoding") for c in v.split(b",")
    ]
    if codings:
        if codings != [b"chunked"]:
            raise httpx2.RemoteProtocolError(f"unsupported transfer coding {b', '.join(codings)!r}")
        return "chunked", 0
    lengths = {
        part.strip() for value in _header(headers, b"content-length") for part in value.split(b",")
    }
    if not lengths:
        return "close", 0
    if len(lengths) > 1 or not all(v.isdigit() for v in lengths):
        raise httpx2.RemoteProtocolError(
            f"conflicting or malformed content-length {sorted(lengths)!r}"
        )
    length = int(lengths.pop())
    return ("length", length) if length else ("none", 0)
