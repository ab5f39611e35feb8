"""A loopback TCP server that reads requests and writes exactly the bytes a test gives it.

No HTTP library on the server side: what a client sends is kept as it arrived (``requests``),
and what it receives is whatever a test crafted, malformed or not.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any


@dataclass
class Conn:
    """One accepted connection, as the server sees it."""

    server: RawServer
    number: int  # 1 for the first connection the server accepted
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def request(self) -> bytes | None:
        """The next request (head and ``Content-Length`` body), or None once the client closed."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            self.server.stray += exc.partial
            return None
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        request = head + await self.reader.readexactly(length)
        self.server.requests.append(request)
        return request

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def until_closed(self) -> bytes:
        """Whatever else the client sends, once it closed its side."""
        return await self.reader.read()


Handler = Callable[[Conn], Awaitable[None]]


class RawServer:
    """A loopback TCP server running ``handler`` on each connection it accepts; it counts the
    connections, keeps every request it read, and closes each connection when its handler ends."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self.connections = 0
        self.requests: list[bytes] = []
        self.stray = b""  # bytes that were not a whole request
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handler(Conn(self, self.connections, reader, writer))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away: nothing to answer
        finally:
            writer.close()
            self._tasks.discard(task)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()


@asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[RawServer]:
    server = RawServer(handler)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def response(
    body: bytes = b"", *headers: str, status: str = "200 OK", version: str = "HTTP/1.1"
) -> bytes:
    """A whole response framed by ``Content-Length``."""
    lines = [f"{version} {status}", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def answering(respond: Callable[[Conn, bytes], bytes]) -> Handler:
    """Answer each request of a connection with ``respond(conn, request)``, until the client
    closes: a keep-alive server."""

    async def handler(conn: Conn) -> None:
        while (request := await conn.request()) is not None:
            await conn.send(respond(conn, request))

    return handler
