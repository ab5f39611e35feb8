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
* a response without end: a body over 64 MiB, more than ten ``1xx`` answers, or a head not
  complete within the read timeout (which bounds each read of the body, as in the SDK's own
  transport, and the whole head: a server trickling header lines cannot hold a request);
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
from collections.abc import AsyncIterator
from contextlib import nullcontext

import httpx2

from agentworld.providers._http11 import (
    MAX_RESPONSE_BYTES,
    BodyFraming,
    ResponseHead,
    body_framing,
    has_token,
    header_values,
    parse_head,
    request_head,
)
from agentworld.providers._wire import MAX_BUFFERED, Wire, cut_short

MAX_INTERIM_RESPONSES = 10
"""``1xx`` answers skipped before the final one; a server sending them without end is refused."""
KEEPALIVE_EXPIRY = 5.0
"""Seconds an idle connection is kept for reuse (the SDK's default transport keeps 5 too)."""


def is_plain_http_endpoint(base_url: str | None) -> bool:
    """Whether requests to ``base_url`` go straight to it over plain HTTP: an ``http://`` URL,
    and no ``HTTP_PROXY`` or ``ALL_PROXY`` variable (any case) in the environment. With one,
    the SDK's transport decides, ``NO_PROXY`` included, exactly as it always did."""
    if base_url is None or not base_url.lower().startswith("http://"):
        return False
    return not any(
        value and name.lower() in ("http_proxy", "all_proxy") for name, value in os.environ.items()
    )


class _Connection:
    __slots__ = ("wire", "idle_since")

    def __init__(self, wire: Wire) -> None:
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
        request_bytes = request_head(request)
        body = await request.aread()
        if "chunked" in request.headers.get("transfer-encoding", "").lower():
            body = (b"%x\r\n%b\r\n0\r\n\r\n" % (len(body), body)) if body else b"0\r\n\r\n"
        await self._acquire(timeouts.get("pool"))
        connection: _Connection | None = None
        try:
            origin = (url.host, url.port or 80)
            connection = self._take_idle(origin) or await _connect(origin, timeouts.get("connect"))
            wire = connection.wire
            await wire.write(request_bytes + body, timeouts.get("write"))
            head = await _read_head(wire, timeouts.get("read"))
            framing, length = body_framing(request.method, head.status, head.headers)
            keep_alive = head.version == b"HTTP/1.1" and not has_token(
                head.headers, b"connection", b"close"
            )
            if framing == "close" or (
                framing == "chunked" and header_values(head.headers, b"content-length")
            ):
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
            head.status,
            headers=head.headers,
            stream=stream,
            extensions={"http_version": head.version, "reason_phrase": head.reason},
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
        received = 0
        async for data in self._read():
            received += len(data)
            if received > MAX_RESPONSE_BYTES:
                raise httpx2.RemoteProtocolError(
                    f"the response is longer than {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB"
                )
            yield data
        self._complete = True

    async def _read(self) -> AsyncIterator[bytes]:
        wire = self._connection.wire
        if self._framing == "length":
            remaining = self._length
            while remaining:
                data = await wire.read_some(min(remaining, MAX_BUFFERED), self._timeout)
                if not data:
                    raise cut_short("response body", received=True)
                remaining -= len(data)
                yield data
        elif self._framing == "chunked":
            async for data in _chunks(wire, self._timeout):
                yield data
        elif self._framing == "close":
            while data := await wire.read_some(MAX_BUFFERED, self._timeout):
                yield data

    async def aclose(self) -> None:
        if self._released:
            return
        self._released = True
        self._transport.release(
            self._origin, self._connection, reuse=self._complete and self._keep_alive
        )


async def _chunks(wire: Wire, timeout: float | None) -> AsyncIterator[bytes]:
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
            _, wire = await loop.create_connection(Wire, host, port)
    except TimeoutError:
        raise httpx2.ConnectTimeout(
            f"cannot connect to {host}:{port} within {timeout:g} s"
        ) from None
    except OSError as exc:
        raise httpx2.ConnectError(f"cannot connect to {host}:{port}: {exc}") from exc
    return _Connection(wire)


async def _read_head(wire: Wire, timeout: float | None) -> ResponseHead:
    """The final response's status, reason, version and headers (1xx interim answers skipped),
    all of it within ``timeout``."""
    try:
        async with asyncio.timeout(timeout) if timeout is not None else nullcontext():
            return await _final_head(wire)
    except TimeoutError:
        raise httpx2.ReadTimeout(
            f"no complete answer from the server within {timeout:g} s"
        ) from None


async def _final_head(wire: Wire) -> ResponseHead:
    for _ in range(MAX_INTERIM_RESPONSES + 1):
        head = parse_head(await wire.read_until(b"\r\n\r\n", None, "response head"))
        if head.status >= 200:
            return head
    raise httpx2.RemoteProtocolError(f"more than {MAX_INTERIM_RESPONSES} interim (1xx) answers")
