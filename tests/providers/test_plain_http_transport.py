"""``PlainHTTPTransport`` against real loopback sockets that send exactly crafted bytes.

The transport is a hand-written HTTP/1.1 client: whatever it gets wrong, it gets wrong on the
wire, so every case here is a real TCP server on 127.0.0.1 (``asyncio.start_server``, or a
thread server where the test needs two event loops) writing raw bytes, with no HTTP library
on the server side and nothing of ours mocked. What is checked:

* keep-alive: a connection is reused when, and only when, it is certainly clean: not after
  ``Connection: close``, HTTP/1.0, a read-to-close body, the peer's close, or stray bytes
  that arrived with or after an answer (those would be taken for the next answer);
* body framings: ``Content-Length``, chunked (extensions, trailers, any split), read-to-close,
  interim 1xx answers skipped;
* failing closed: every malformed or ambiguous answer is ``RemoteProtocolError``, a request
  header that could smuggle another is ``LocalProtocolError`` before any byte is sent, and
  any scheme but ``http`` is ``UnsupportedProtocol`` before any connection;
* the slots: ``max_connections`` bounds the requests on the wire, and a timeout, an error or
  a cancellation gives the slot back;
* ``is_plain_http_endpoint`` and the OpenAI provider end to end over this transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import socket
import socketserver
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from raw_http_server import Conn, Handler, RawServer, answering, response, serving

from agentworld.errors import ProviderConnectionError, ProviderResponseError
from agentworld.providers._http11 import MAX_HEAD_BYTES, MAX_RESPONSE_BYTES
from agentworld.providers._wire import MAX_BUFFERED
from agentworld.providers.base import LLMRequest, PromptMessage
from agentworld.providers.openai import SDK_PLATFORM_HEADERS, OpenAIProvider, pooled_http_client
from agentworld.providers.plain_http import PlainHTTPTransport, is_plain_http_endpoint

SETTLE = 0.05
"""Seconds for bytes or a close sent on loopback to reach the other side's event loop."""

# -- the raw server ---------------------------------------------------------------------------


def by_connection(conn: Conn, request: bytes) -> bytes:
    """Says which connection answered, so a test sees whether one was reused."""
    return response(b"conn %d" % conn.number)


def client_for(
    server: RawServer, *, max_connections: int = 1, timeout: float = 2.0
) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=PlainHTTPTransport(max_connections=max_connections),
        base_url=server.url,
        timeout=timeout,
    )


# -- keep-alive and reuse ---------------------------------------------------------------------


async def test_sequential_requests_reuse_one_connection() -> None:
    async with (
        serving(
            answering(lambda conn, req: response(b"answer %d" % len(conn.server.requests)))
        ) as server,
        client_for(server) as client,
    ):
        first = await client.get("/a")
        second = await client.get("/b")

    assert (first.status_code, first.text) == (200, "answer 1")
    assert (second.status_code, second.text) == (200, "answer 2")
    assert server.connections == 1
    assert [r.split(b"\r\n", 1)[0] for r in server.requests] == [
        b"GET /a HTTP/1.1",
        b"GET /b HTTP/1.1",
    ]


async def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    closed = asyncio.Event()

    async def answer_once(conn: Conn) -> None:
        if await conn.request() is not None:
            await conn.send(by_connection(conn, b""))
            conn.writer.close()
            await conn.writer.wait_closed()
            closed.set()

    async with serving(answer_once) as server, client_for(server) as client:
        assert (await client.get("/")).text == "conn 1"
        await asyncio.wait_for(closed.wait(), 1.0)
        await asyncio.sleep(SETTLE)  # the FIN reaches the idle connection
        second = await client.get("/")

    assert (second.status_code, second.text) == (200, "conn 2")
    assert server.connections == 2


@pytest.mark.parametrize("when", ["with the answer", "while idle"])
async def test_bytes_after_a_complete_answer_are_never_taken_for_the_next_one(when: str) -> None:
    """The first connection sends a second, bogus answer behind the real one (in the same
    write, or a moment later) and would then answer ``stale``: the next request must get its
    own answer from a fresh connection."""
    bogus = response(b"bogus")
    bogus_sent = asyncio.Event()

    async def handler(conn: Conn) -> None:
        if conn.number == 1 and await conn.request() is not None:
            if when == "with the answer":
                await conn.send(response(b"first") + bogus)
            else:
                await conn.send(response(b"first"))
                await asyncio.sleep(SETTLE / 2)  # the client has read the answer: idle now
                await conn.send(bogus)
            bogus_sent.set()
            while await conn.request() is not None:
                await conn.send(response(b"stale"))
        else:
            await answering(by_connection)(conn)

    async with serving(handler) as server, client_for(server) as client:
        assert (await client.get("/")).text == "first"
        await asyncio.wait_for(bogus_sent.wait(), 1.0)
        await asyncio.sleep(SETTLE)  # the bogus bytes reach the idle connection
        second = await client.get("/")

    assert (second.status_code, second.text) == (200, "conn 2")
    assert server.connections == 2


# -- body framings ----------------------------------------------------------------------------

CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
CHUNKED_BODY = (
    b"5;name=value\r\nhello\r\n"  # a chunk extension
    b'1 ; x="q"\r\n \r\n'
    b"A\r\nworld!!!!!\r\n"  # upper-case hex
    b"00\r\n"  # the last chunk, written 00
    b"X-Checksum: abc\r\nX-Other: 1\r\n\r\n"  # trailers
)


async def send_in_pieces(conn: Conn, data: bytes, size: int) -> None:
    for start in range(0, len(data), size):
        await conn.send(data[start : start + size])
        await asyncio.sleep(0.001)


@pytest.mark.parametrize("piece", [0, 1, 7], ids=["at once", "byte by byte", "7-byte pieces"])
async def test_a_chunked_body_is_decoded_exactly_and_the_connection_kept(piece: int) -> None:
    async def handler(conn: Conn) -> None:
        while await conn.request() is not None:
            if piece:
                await send_in_pieces(conn, CHUNKED_HEAD + CHUNKED_BODY, piece)
            else:
                await conn.send(CHUNKED_HEAD + CHUNKED_BODY)

    async with serving(handler) as server, client_for(server) as client:
        first = await client.get("/")
        second = await client.get("/")

    assert first.content == second.content == b"hello world!!!!!"
    assert "transfer-encoding" in first.headers
    assert server.connections == 1  # the trailers were consumed to the last byte


async def test_a_read_to_close_body_is_read_whole_and_its_connection_not_reused() -> None:
    body = bytes(range(256)) * (3 * MAX_BUFFERED // 256)  # past the buffer bound: reads pause

    async def handler(conn: Conn) -> None:
        if conn.number == 1 and await conn.request() is not None:
            await conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")
            await conn.send(body)  # and the close ends the body
        else:
            await answering(by_connection)(conn)

    async with serving(handler) as server, client_for(server) as client:
        first = await client.get("/")
        second = await client.get("/")

    assert first.content == body
    assert second.text == "conn 2"
    assert server.connections == 2


async def test_a_large_content_length_body_arrives_whole_over_one_connection() -> None:
    body = bytes(range(256)) * (3 * MAX_BUFFERED // 256)

    async with (
        serving(answering(lambda conn, req: response(body))) as server,
        client_for(server) as client,
    ):
        first = await client.get("/")
        second = await client.get("/")

    assert first.content == second.content == body
    assert server.connections == 1


@pytest.mark.parametrize(
    "answer",
    [
        response(b"once", "Connection: close"),
        response(b"once", "Connection: Keep-Alive, Close"),
        response(b"once", version="HTTP/1.0"),
        response(b"once", "Connection: keep-alive", version="HTTP/1.0"),
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nonce\r\n0\r\n\r\n",
    ],
    ids=[
        "connection close",
        "close among tokens",
        "HTTP/1.0",
        "HTTP/1.0 keep-alive",
        "chunked+length",
    ],
)
async def test_an_answer_that_does_not_keep_the_connection_alive_is_not_reused(
    answer: bytes,
) -> None:
    """The first connection stays open and would answer ``stale``: the second request must
    go to a fresh one all the same."""

    async def handler(conn: Conn) -> None:
        if conn.number == 1 and await conn.request() is not None:
            await conn.send(answer)
            while await conn.request() is not None:
                await conn.send(response(b"stale"))
        else:
            await answering(by_connection)(conn)

    async with serving(handler) as server, client_for(server) as client:
        first = await client.get("/")
        second = await client.get("/")

    assert first.text == "once"
    assert second.text == "conn 2"
    assert server.connections == 2


@pytest.mark.parametrize(
    "interim",
    [
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n",
    ],
    ids=["100", "103 with headers", "two interim"],
)
async def test_interim_answers_before_the_final_one_are_skipped(interim: bytes) -> None:
    async with (
        serving(
            answering(lambda conn, req: interim + response(b"final", "X-Final: yes"))
        ) as server,
        client_for(server) as client,
    ):
        first = await client.get("/")
        second = await client.get("/")

    assert (first.status_code, first.text, first.headers.get("x-final")) == (200, "final", "yes")
    assert "link" not in first.headers
    assert (second.status_code, second.text) == (200, "final")
    assert server.connections == 1


async def test_a_head_request_and_a_204_have_no_body_whatever_their_length_says() -> None:
    answers = iter(
        [
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",  # HEAD: the length of a GET
            b"HTTP/1.1 204 No Content\r\n\r\n",
            response(b"after"),
        ]
    )
    async with (
        serving(answering(lambda conn, req: next(answers))) as server,
        client_for(server) as client,
    ):
        head = await client.head("/")
        empty = await client.get("/")
        after = await client.get("/")

    assert (head.status_code, head.content, head.headers["content-length"]) == (200, b"", "5")
    assert (empty.status_code, empty.content) == (204, b"")
    assert after.text == "after"
    assert server.connections == 1


# -- failing closed on what the server sends --------------------------------------------------

OK_LINE = b"HTTP/1.1 200 OK\r\n"
BIG_HEADER = b"X-Big: " + b"a" * (MAX_HEAD_BYTES + 1024) + b"\r\n"
MANY_HEADERS = b"".join(b"X-Header-%05d: %s\r\n" % (n, b"v" * 40) for n in range(1500))


@dataclass(frozen=True)
class Malformed:
    answer: bytes
    close: bool = True  # close after sending; else hold the connection open until the client does


MALFORMED = {
    "bad status line": Malformed(b"HTTP/1.1200 OK\r\nContent-Length: 0\r\n\r\n"),
    "not HTTP": Malformed(b"ICY 200 OK\r\nContent-Length: 0\r\n\r\n"),
    "HTTP/2 status line": Malformed(b"HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n"),
    "no status": Malformed(b"HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
    "two-digit status": Malformed(b"HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n"),
    "four-digit status": Malformed(b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n"),
    "status not digits": Malformed(b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n"),
    "header without colon": Malformed(OK_LINE + b"NoColonHere\r\nContent-Length: 0\r\n\r\n"),
    "header name with a space": Malformed(OK_LINE + b"Bad Name: x\r\nContent-Length: 0\r\n\r\n"),
    "space before the colon": Malformed(OK_LINE + b"Content-Length : 0\r\n\r\n"),
    "empty header name": Malformed(OK_LINE + b": x\r\nContent-Length: 0\r\n\r\n"),
    "NUL in a header value": Malformed(OK_LINE + b"X-A: b\0c\r\nContent-Length: 0\r\n\r\n"),
    "head over 64 KiB, one header": Malformed(OK_LINE + BIG_HEADER + b"Content-Length: 0\r\n\r\n"),
    "head over 64 KiB, many headers": Malformed(
        OK_LINE + MANY_HEADERS + b"Content-Length: 0\r\n\r\n"
    ),
    "head over 64 KiB, never ending": Malformed(OK_LINE + BIG_HEADER, close=False),
    "transfer-encoding gzip": Malformed(OK_LINE + b"Transfer-Encoding: gzip\r\n\r\nxyz"),
    "gzip then chunked": Malformed(
        OK_LINE + b"Transfer-Encoding: gzip, chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n"
    ),
    "two content-lengths": Malformed(
        OK_LINE + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\nabc"
    ),
    "a list of two lengths": Malformed(OK_LINE + b"Content-Length: 2, 3\r\n\r\nabc"),
    "negative content-length": Malformed(OK_LINE + b"Content-Length: -1\r\n\r\nabc"),
    "content-length not a number": Malformed(OK_LINE + b"Content-Length: 0x3\r\n\r\nabc"),
    "body shorter than its length": Malformed(OK_LINE + b"Content-Length: 10\r\n\r\nshort"),
    "malformed chunk size": Malformed(
        OK_LINE + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhi\r\n0\r\n\r\n"
    ),
    "0x chunk size": Malformed(
        OK_LINE + b"Transfer-Encoding: chunked\r\n\r\n0x2\r\nhi\r\n0\r\n\r\n"
    ),
    "empty chunk size": Malformed(
        OK_LINE + b"Transfer-Encoding: chunked\r\n\r\n\r\nhi\r\n0\r\n\r\n"
    ),
    "chunk not followed by CRLF": Malformed(
        OK_LINE + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"
    ),
    "chunked body cut short": Malformed(OK_LINE + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhel"),
    "no last chunk": Malformed(OK_LINE + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"),
    "trailers cut short": Malformed(
        OK_LINE + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n"
    ),
    "status below 100": Malformed(b"HTTP/1.1 099 Weird\r\nContent-Length: 0\r\n\r\n"),
    "eleven interim answers": Malformed(b"HTTP/1.1 100 Continue\r\n\r\n" * 11, close=False),
    "content-length over the limit": Malformed(
        OK_LINE + b"Content-Length: %d\r\n\r\nabc" % (MAX_RESPONSE_BYTES + 1), close=False
    ),
    "content-length of 20 digits": Malformed(
        OK_LINE + b"Content-Length: 00000000000000000003\r\n\r\nabc"
    ),
    "closed without a response": Malformed(b""),
    "closed in the middle of the head": Malformed(OK_LINE + b"Content-Le"),
    "101 switching protocols": Malformed(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        close=False,
    ),
}


@pytest.mark.parametrize("case", MALFORMED.values(), ids=MALFORMED.keys())
async def test_an_answer_that_cannot_be_read_with_certainty_is_a_remote_protocol_error(
    case: Malformed,
) -> None:
    """The first request gets the malformed answer; the next, on the same one-slot client,
    gets a good one from a fresh connection: the slot was given back, the connection dropped."""

    async def handler(conn: Conn) -> None:
        if conn.number == 1 and await conn.request() is not None:
            await conn.send(case.answer)
            if not case.close:
                await conn.until_closed()
        else:
            await answering(by_connection)(conn)

    async with serving(handler) as server, client_for(server, timeout=2.0) as client:
        with pytest.raises(httpx2.RemoteProtocolError):
            await client.get("/")
        after = await client.get("/")

    assert after.text == "conn 2"
    assert server.connections == 2


# -- failing closed on what the request would send --------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (b"X-A", b"b\r\nX-Smuggled: 1"),
        (b"X-A", b"b\nX-Smuggled: 1"),
        (b"X-A", b"b\rX-Smuggled: 1"),
        (b"X-A", b"b\0c"),
        (b"X-A\r\nX-Smuggled", b"1"),
        (b"X-A: b\r\nX-Smuggled", b"1"),
        (b"Transfer-Encoding ", b"chunked"),
    ],
    ids=[
        "CRLF in value",
        "LF in value",
        "CR in value",
        "NUL in value",
        "CRLF in name",
        "colon in name",
        "space in name",
    ],
)
async def test_a_request_header_that_could_smuggle_another_is_refused_before_any_byte(
    name: bytes, value: bytes
) -> None:
    async with (
        serving(answering(by_connection)) as server,
        client_for(server) as client,
    ):
        with pytest.raises(httpx2.LocalProtocolError):
            await client.get("/", headers=[(name, value)])
        await asyncio.sleep(SETTLE)
        assert server.connections == 0  # not even a connection
        assert server.requests == [] and server.stray == b""

        clean = await client.get("/", headers={"X-A": "b"})  # the slot was given back

    assert clean.text == "conn 1"
    assert b"smuggled" not in b"".join(server.requests).lower()


@pytest.mark.parametrize("scheme", ["https", "ws", "wss", "ftp", "socks5"])
async def test_any_scheme_but_http_is_refused_without_connecting(scheme: str) -> None:
    transport = PlainHTTPTransport(max_connections=1)
    async with serving(answering(by_connection)) as server:
        with pytest.raises(httpx2.UnsupportedProtocol):
            await transport.handle_async_request(
                httpx2.Request("GET", f"{scheme}://127.0.0.1:{server.port}/")
            )
        await asyncio.sleep(SETTLE)
        assert server.connections == 0
        await transport.aclose()


async def test_a_redirect_to_https_is_refused_without_connecting() -> None:
    async with serving(answering(by_connection)) as target:
        location = f"Location: https://127.0.0.1:{target.port}/"
        async with (
            serving(
                answering(lambda conn, req: response(b"", location, status="307 Moved"))
            ) as server,
            client_for(server) as client,
        ):
            with pytest.raises(httpx2.UnsupportedProtocol):
                await client.get("/", follow_redirects=True)
        await asyncio.sleep(SETTLE)
        assert server.connections == 1
        assert target.connections == 0


# -- timeouts, slots, cancellation, closed ports ----------------------------------------------


def never_answering(closed: asyncio.Event) -> Handler:
    """Reads the request and holds the connection, answering nothing, until the client closes."""

    async def handler(conn: Conn) -> None:
        await conn.request()
        await conn.until_closed()
        closed.set()

    return handler


async def test_a_server_that_never_answers_times_out_and_gives_the_slot_back() -> None:
    closed = asyncio.Event()
    async with (
        serving(never_answering(closed)) as silent,
        serving(answering(by_connection)) as good,
        client_for(good, max_connections=1) as client,
    ):
        started = time.monotonic()
        with pytest.raises(httpx2.ReadTimeout):
            await client.get(f"{silent.url}/", timeout=httpx2.Timeout(0.3))
        elapsed = time.monotonic() - started
        await asyncio.wait_for(closed.wait(), 1.0)  # the client dropped the timed-out connection

        after = await client.get("/", timeout=httpx2.Timeout(1.0))

    assert 0.25 <= elapsed < 1.0
    assert after.text == "conn 1"


async def test_a_server_that_does_not_read_the_request_times_out_the_write() -> None:
    """A request larger than the socket's buffers, to a server that never reads it: the write
    waits for the peer to drain, at most the write timeout, then fails as a write timeout and
    gives its slot back (a request that fits is handed over without waiting, and no timer)."""
    accepted = asyncio.Event()

    async def deaf(conn: Conn) -> None:
        accepted.set()
        await asyncio.sleep(5)

    async with (
        serving(deaf) as silent,
        serving(answering(by_connection)) as good,
        client_for(good, max_connections=1) as client,
    ):
        large = b"x" * (32 * 1024 * 1024)  # beyond what loopback buffers hold unread
        started = time.monotonic()
        with pytest.raises(httpx2.WriteTimeout):
            await client.post(f"{silent.url}/", content=large, timeout=httpx2.Timeout(0.3))
        elapsed = time.monotonic() - started
        after = await client.get("/", timeout=httpx2.Timeout(1.0))

    assert accepted.is_set() and 0.25 <= elapsed < 3.0
    assert after.text == "conn 1"


async def test_a_head_trickled_line_by_line_times_out_as_a_whole() -> None:
    """Each header line comes within the read timeout, but the head as a whole does not: the
    request fails within about that timeout instead of waiting as long as the server likes."""

    async def trickle(conn: Conn) -> None:
        await conn.request()
        await conn.send(OK_LINE)
        for n in range(100):
            await asyncio.sleep(0.05)
            await conn.send(b"X-Slow-%d: 1\r\n" % n)
        await conn.until_closed()

    async with serving(trickle) as server, client_for(server) as client:
        started = time.monotonic()
        with pytest.raises(httpx2.ReadTimeout):
            await client.get("/", timeout=httpx2.Timeout(0.4))
        elapsed = time.monotonic() - started

    assert 0.35 <= elapsed < 1.5


async def test_a_body_without_end_is_refused_past_the_limit() -> None:
    """A server answering with no length and no end: refused once the body passes
    ``MAX_RESPONSE_BYTES``, rather than kept in memory until the process dies."""
    piece = b"x" * (1024 * 1024)

    async def endless(conn: Conn) -> None:
        await conn.request()
        await conn.send(OK_LINE + b"Content-Type: text/plain\r\n\r\n")
        with contextlib.suppress(ConnectionError):
            while True:
                await conn.send(piece)

    async with serving(endless) as server, client_for(server, timeout=10.0) as client:
        with pytest.raises(httpx2.RemoteProtocolError, match="longer than 64 MiB"):
            await client.get("/")


async def test_no_more_than_max_connections_requests_are_on_the_wire_at_once() -> None:
    in_flight = peak = 0

    async def handler(conn: Conn) -> None:
        nonlocal in_flight, peak
        while (request := await conn.request()) is not None:
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.05)
            in_flight -= 1
            await conn.send(response(request.split(b" ", 2)[1]))

    async with serving(handler) as server, client_for(server, max_connections=2) as client:
        answers = await asyncio.gather(*(client.get(f"/{n}") for n in range(6)))

    assert sorted(a.text for a in answers) == [f"/{n}" for n in range(6)]
    assert all(a.status_code == 200 for a in answers)
    assert peak == 2
    assert server.connections == 2  # the waiting requests took the released connections
    assert len(server.requests) == 6


@pytest.mark.parametrize("where", ["waiting for the head", "reading the body"])
async def test_a_cancelled_request_gives_its_slot_back_and_its_connection_is_dropped(
    where: str,
) -> None:
    arrived = asyncio.Event()
    closed = asyncio.Event()

    async def handler(conn: Conn) -> None:
        if conn.number == 1:
            await conn.request()
            if where == "reading the body":
                await conn.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart")
            arrived.set()
            while await conn.request() is not None:  # were it reused: a wrong answer
                await conn.send(response(b"stale"))
            closed.set()
        else:
            await answering(by_connection)(conn)

    async with serving(handler) as server, client_for(server, max_connections=1) as client:

        async def hang() -> None:
            async with client.stream("GET", "/") as streamed:
                async for _ in streamed.aiter_raw():
                    await asyncio.sleep(3600)

        task = asyncio.create_task(hang())
        await asyncio.wait_for(arrived.wait(), 1.0)
        await asyncio.sleep(SETTLE)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(closed.wait(), 1.0)

        after = await client.get("/", timeout=httpx2.Timeout(1.0))

    assert after.text == "conn 2"
    assert server.connections == 2


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_a_refused_connection_is_a_connect_error_and_gives_the_slot_back() -> None:
    port = free_port()
    async with serving(answering(by_connection)) as good, client_for(good) as client:
        for _ in range(2):  # a slot kept by the first failure would make the second a PoolTimeout
            with pytest.raises(httpx2.ConnectError):
                await client.get(f"http://127.0.0.1:{port}/", timeout=httpx2.Timeout(1.0))
        after = await client.get("/", timeout=httpx2.Timeout(1.0))

    assert after.text == "conn 1"


# -- two event loops --------------------------------------------------------------------------


class _KeepAliveHandler(socketserver.StreamRequestHandler):
    server: _CountingServer

    def handle(self) -> None:
        with self.server.lock:
            self.server.connections += 1
            number = self.server.connections
        while True:
            head = b""
            while (line := self.rfile.readline()) not in (b"\r\n", b""):
                head += line
            if not head:
                break
            self.wfile.write(response(b"conn %d" % number))
            self.wfile.flush()
        with self.server.lock:
            self.server.closed_by_client.add(number)


class _CountingServer(socketserver.ThreadingTCPServer):
    """A keep-alive server on threads, so that it outlives the event loops of a test."""

    daemon_threads = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _KeepAliveHandler)
        self.lock = threading.Lock()
        self.connections = 0
        self.closed_by_client: set[int] = set()

    def closed_within(self, seconds: float) -> set[int]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.closed_by_client) == self.connections:
                    break
            time.sleep(0.01)
        with self.lock:
            return set(self.closed_by_client)


@contextmanager
def thread_server() -> Iterator[_CountingServer]:
    server = _CountingServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_one_transport_serves_two_successive_event_loops() -> None:
    """``asyncio.run`` twice with the same client: the second loop must not use the first
    one's idle connection (its loop is closed) and gets its answer over a new one; and that
    connection is closed, not leaked (an asyncio transport dropped unclosed keeps its socket
    open until collected, then warns: an error under this suite's ``filterwarnings``)."""
    with thread_server() as server:
        port = server.server_address[1]
        client = httpx2.AsyncClient(
            transport=PlainHTTPTransport(max_connections=1),
            base_url=f"http://127.0.0.1:{port}",
            timeout=2.0,
        )

        async def get() -> str:
            return (await client.get("/")).text

        async def get_and_close() -> str:
            try:
                return await get()
            finally:
                await client.aclose()

        try:
            first = asyncio.run(get())
            second = asyncio.run(get_and_close())

            assert (first, second) == ("conn 1", "conn 2")
            assert server.connections == 2
            assert server.closed_within(1.0) == {1, 2}, "the first loop's connection was leaked"
        finally:
            gc.collect()  # a leaked transport warns here, in this test, not in a later one


# -- when the transport applies ---------------------------------------------------------------

PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY")


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (*PROXY_VARIABLES, "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_plain_http_url_without_proxies_is_a_plain_http_endpoint(
    no_proxies: pytest.MonkeyPatch,
) -> None:
    assert is_plain_http_endpoint("http://127.0.0.1:1/v1")
    assert is_plain_http_endpoint("HTTP://localhost:11434/v1")
    assert not is_plain_http_endpoint("https://127.0.0.1:1/v1")
    assert not is_plain_http_endpoint(None)
    no_proxies.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")  # not for http:// URLs
    assert is_plain_http_endpoint("http://127.0.0.1:1/v1")


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"])
def test_a_proxy_from_the_environment_takes_the_endpoint_off_this_transport(
    no_proxies: pytest.MonkeyPatch, variable: str
) -> None:
    """With a proxy variable, the SDK's transport decides (it honours ``NO_PROXY`` itself), so
    even a ``NO_PROXY`` that covers the host leaves this transport out."""
    no_proxies.setenv(variable, "http://proxy.invalid:3128")
    assert not is_plain_http_endpoint("http://127.0.0.1:1/v1")

    for covering in ("example.org", "localhost,127.0.0.1", "*"):
        no_proxies.setenv("NO_PROXY", covering)
        assert not is_plain_http_endpoint("http://127.0.0.1:1/v1")

    no_proxies.delenv(variable)
    assert is_plain_http_endpoint("http://127.0.0.1:1/v1")


def test_the_openai_client_uses_this_transport_only_for_a_plain_http_endpoint(
    no_proxies: pytest.MonkeyPatch,
) -> None:
    """``_transport`` is httpx2's own attribute: read, never replaced."""
    plain = pooled_http_client(4, 5.0, "http://127.0.0.1:1/v1")
    tls = pooled_http_client(4, 5.0, "https://127.0.0.1:1/v1")
    no_proxies.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    proxied = pooled_http_client(4, 5.0, "http://127.0.0.1:1/v1")

    assert isinstance(plain._transport, PlainHTTPTransport)
    assert plain._transport.max_connections == 4
    assert not isinstance(tls._transport, PlainHTTPTransport)
    assert not isinstance(proxied._transport, PlainHTTPTransport)


# -- the OpenAI provider end to end -----------------------------------------------------------


def chunked(*pieces: bytes, content_type: str) -> bytes:
    """A 200 answer whose body is ``pieces``, each its own chunk (with an extension)."""
    head = (
        f"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: {content_type}\r\n\r\n"
    ).encode()
    return head + b"".join(b"%x;n=1\r\n%b\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def split(data: bytes, parts: int) -> list[bytes]:
    step = -(-len(data) // parts)
    return [data[i : i + step] for i in range(0, len(data), step)]


def completion(text: str) -> bytes:
    return json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    ).encode()


def sse_events(text: str) -> list[bytes]:
    def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
        chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        return b"data: %s\n\n" % json.dumps({**chunk, "choices": choices, **extra}).encode()

    deltas = [
        event([{"index": 0, "delta": {"role": "assistant", "content": text[i : i + 3]}}])
        for i in range(0, len(text), 3)
    ]
    finish = event([{"index": 0, "delta": {}, "finish_reason": "stop"}])
    usage = event([], usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5})
    return [*deltas, finish, usage, b"data: [DONE]\n\n"]


ANSWER = "Plain HTTP, chunked and kept alive."


def openai_endpoint(conn: Conn, request: bytes) -> bytes:
    """Answers chat completions with chunked bodies: the JSON in three chunks, or the SSE
    events one a chunk with the second event split across two."""
    if json.loads(request.partition(b"\r\n\r\n")[2]).get("stream"):
        events = sse_events(ANSWER)
        pieces = [events[0], *split(events[1], 2), *events[2:]]
        return chunked(*pieces, content_type="text/event-stream")
    return chunked(*split(completion(ANSWER), 3), content_type="application/json")


def ask() -> LLMRequest:
    return LLMRequest(model="m", messages=[PromptMessage(role="user", content="hi")])


@asynccontextmanager
async def provider_for(server: RawServer) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(api_key="k", base_url=f"{server.url}/v1", timeout=5.0)
    try:
        yield provider
    finally:
        await provider.aclose()


async def test_the_provider_assembles_chunked_answers_whole_and_streamed(
    no_proxies: pytest.MonkeyPatch,
) -> None:
    streamed: list[str] = []
    async with serving(answering(openai_endpoint)) as server, provider_for(server) as provider:
        whole = await provider.complete(ask())
        stream = await provider.complete(ask(), stream=True, on_text=streamed.append)

    assert whole.content == ANSWER
    assert stream.content == ANSWER
    assert "".join(streamed) == ANSWER and len(streamed) > 1
    assert server.connections == 1  # both over one kept-alive connection
    assert len(server.requests) == 2
    for request in server.requests:
        head = request.partition(b"\r\n\r\n")[0].lower()
        assert head.startswith(b"post /v1/chat/completions http/1.1\r\n")
        assert b"\r\nauthorization: bearer k\r\n" in head
        # nothing about this machine: its OS, CPU, Python (the SDK's platform headers)
        sent = {line.partition(b":")[0] for line in head.split(b"\r\n")[1:]}
        assert b"x-stainless-os" not in sent
        assert sent.isdisjoint(name.lower().encode() for name in SDK_PLATFORM_HEADERS)


@pytest.mark.parametrize(
    ("stream", "answer"),
    [
        (
            False,
            OK_LINE
            + b"Content-Type: application/json\r\nContent-Length: 400\r\n\r\n"
            + completion(ANSWER)[:40],
        ),
        (False, chunked(*split(completion(ANSWER), 3), content_type="application/json")[:-5]),
        # every delta and the finish_reason, then the close instead of usage, [DONE], last chunk
        (True, chunked(*sse_events(ANSWER)[:-2], content_type="text/event-stream")[:-5]),
    ],
    ids=["length cut short", "chunked cut short", "stream cut short"],
)
async def test_an_answer_cut_short_is_a_provider_connection_error(
    no_proxies: pytest.MonkeyPatch, stream: bool, answer: bytes
) -> None:
    """The server closes before the body's framing says it is complete. In the last two cases
    what arrived parses (the whole JSON; the text and its finish_reason): only the transport's
    refusal of the cut body makes them errors."""

    async def handler(conn: Conn) -> None:
        if await conn.request() is not None:
            await conn.send(answer)

    async with serving(handler) as server, provider_for(server) as provider:
        with pytest.raises(ProviderConnectionError) as info:
            await provider.complete(ask(), stream=stream)

    assert info.value.retryable
    assert server.connections == 1


def closing_with(answer: bytes) -> Handler:
    async def handler(conn: Conn) -> None:
        if await conn.request() is not None:
            await conn.send(answer)

    return handler


async def test_an_unreadable_answer_says_why_and_not_that_the_server_was_unreachable(
    no_proxies: pytest.MonkeyPatch,
) -> None:
    """The SDK says "Connection error." for every transport failure; the provider's message
    carries the transport's reason, and the server, which answered, is not called unreachable."""
    bad = OK_LINE + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhi\r\n0\r\n\r\n"
    async with serving(closing_with(bad)) as server, provider_for(server) as provider:
        with pytest.raises(ProviderConnectionError) as info:
            await provider.complete(ask())

    message = str(info.value)
    assert "sent an answer that cannot be read: malformed chunk size b'zz'" in message
    assert "cannot reach" not in message and "Connection error" not in message
    assert info.value.retryable


async def test_a_redirect_to_https_is_a_clear_error_that_is_not_retried(
    no_proxies: pytest.MonkeyPatch,
) -> None:
    location = b"HTTP/1.1 307 Moved\r\nLocation: https://127.0.0.1:9/v1/chat/completions\r\n"
    answer = location + b"Content-Length: 0\r\n\r\n"
    async with serving(closing_with(answer)) as server, provider_for(server) as provider:
        with pytest.raises(ProviderConnectionError) as info:
            await provider.complete(ask())

    assert "refusing https://" in str(info.value)
    assert not info.value.retryable  # the same redirect would be refused again


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_body_that_is_not_json_is_said_to_be_so(
    no_proxies: pytest.MonkeyPatch, stream: bool
) -> None:
    if stream:
        body = b"data: {not json}\n\n"
        head = b"Content-Type: text/event-stream\r\n"
    else:
        body = b'{"id": "c1" "choices": []}'
        head = b"Content-Type: application/json\r\n"
    answer = OK_LINE + head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    async with serving(closing_with(answer)) as server, provider_for(server) as provider:
        endpoint = f"{server.url}/v1/"
        with pytest.raises(ProviderResponseError) as info:
            await provider.complete(ask(), stream=stream)

    assert f"{endpoint} returned a body that is not valid JSON" in str(info.value)
