"""One TCP connection's incoming bytes for :mod:`~agentworld.providers.plain_http`: an asyncio
protocol with its buffer in view, so that an idle connection holding anything (bytes, or the
peer's close) is never reused, and reads that wait only as long as their timeout."""

from __future__ import annotations

import asyncio
from contextlib import nullcontext

import httpx2

from agentworld.providers._http11 import MAX_HEAD_BYTES

MAX_BUFFERED = 256 * 1024
"""Bytes buffered from one connection before reading pauses until the reader catches up."""


class Wire(asyncio.Protocol):
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

    async def write(self, data: bytes, timeout: float | None) -> None:
        """Hand ``data`` to the connection; when the peer reads slower than it is sent (the
        transport paused writing), wait until it drained, at most ``timeout`` seconds. A
        request nearly always fits the socket's buffer: then nothing waits, and no timer is set."""
        if self.closed or self.transport is None or self.transport.is_closing():
            raise httpx2.WriteError("the connection was closed before the request was sent")
        self.transport.write(data)
        writable = self._writable
        if writable is None:
            return
        try:
            async with asyncio.timeout(timeout) if timeout is not None else nullcontext():
                await writable
        except TimeoutError:
            raise httpx2.WriteTimeout(f"the request could not be sent within {timeout:g} s") from None
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
                raise cut_short(what, received=bool(self.buffer))
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
                raise cut_short(what, received=True)
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


def cut_short(what: str, *, received: bool) -> httpx2.RemoteProtocolError:
    if what == "response head" and not received:
        return httpx2.RemoteProtocolError("the server disconnected without sending a response")
    return httpx2.RemoteProtocolError(
        f"the server closed the connection in the middle of the {what}"
    )
