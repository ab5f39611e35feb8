"""A non-streamed completion posted straight on the HTTP client (``openai_post``) is the SDK's
``client.post`` without its layers: the same request on the wire, the same answer read from
it, the same error for every failure.

Each case runs both paths against one raw loopback server (no HTTP library on its side): a
provider that built its own SDK client (the direct post), and one given a client built the same
way (the SDK's ``post``). What each sent and what each raised are compared whole.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import openai
import pytest
from raw_http_server import Conn, RawServer, answering, response, serving

from agentworld.errors import ProviderError
from agentworld.models import LLMResponse
from agentworld.providers.base import LLMRequest, PromptMessage
from agentworld.providers.openai import OpenAIProvider, sdk_client
from agentworld.providers.openai_post import event_data

COMPLETION = (
    b'{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",'
    b'"content":"an answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,'
    b'"completion_tokens":2,"total_tokens":5}}'
)
SDK_RETRY_HEADERS = {b"x-stainless-retry-count", b"x-stainless-read-timeout"}
"""What the SDK's ``post`` adds to each request about its own retries; the direct post makes
none (retries are ``RetryingProvider``'s), so it leaves them out."""


def ask() -> LLMRequest:
    return LLMRequest(
        model="m",
        messages=[PromptMessage(role="user", content="héllo \u2603 \"quoted\"")],
        temperature=0.5,
        max_tokens=64,
    )


@asynccontextmanager
async def both_paths(server: RawServer) -> AsyncIterator[tuple[OpenAIProvider, OpenAIProvider]]:
    url = f"{server.url}/v1"
    direct = OpenAIProvider(api_key="sk-test", base_url=url, timeout=5.0)
    through_sdk = OpenAIProvider(
        api_key="sk-test",
        client=sdk_client(api_key="sk-test", base_url=url, timeout=5.0, max_connections=4),
    )
    try:
        yield direct, through_sdk
    finally:
        await direct.aclose()
        await through_sdk.aclose()


def sent(request: bytes) -> tuple[bytes, dict[bytes, bytes], bytes]:
    """A raw request as its request line, its headers (names lower-cased) and its body."""
    head, _, body = request.partition(b"\r\n\r\n")
    line, *fields = head.split(b"\r\n")
    headers = {}
    for field in fields:
        name, _, value = field.partition(b":")
        headers[name.strip().lower()] = value.strip()
    return line, headers, body


async def test_the_direct_post_sends_what_the_sdk_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")  # the SDK sends these when they are set
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    async with (
        serving(answering(lambda _c, _r: ok(COMPLETION))) as server,
        both_paths(server) as (direct, through_sdk),
    ):
        answers = [await direct.complete(ask()), await through_sdk.complete(ask())]

    assert answers[0] == answers[1]
    assert answers[0].content == "an answer"
    (line, headers, body), (sdk_line, sdk_headers, sdk_body) = map(sent, server.requests)
    assert line == sdk_line == b"POST /v1/chat/completions HTTP/1.1"
    assert body == sdk_body
    assert body.decode() == (
        '{"model":"m","messages":[{"role":"user","content":"héllo \u2603 \\"quoted\\""}],'
        '"temperature":0.5,"max_tokens":64}'
    )
    assert set(sdk_headers) >= SDK_RETRY_HEADERS
    assert headers == {k: v for k, v in sdk_headers.items() if k not in SDK_RETRY_HEADERS}
    assert headers[b"authorization"] == b"Bearer sk-test"
    assert (headers[b"openai-organization"], headers[b"openai-project"]) == (b"org-1", b"proj-1")
    assert headers[b"user-agent"] == f"AsyncOpenAI/Python {openai.__version__}".encode()


def test_building_a_provider_asks_the_os_nothing() -> None:
    """The SDK's platform headers are left out, so they are never computed: the SDK computes
    them with ``platform.platform()``, which runs ``uname -p`` in a subprocess -- on the event
    loop, when a provider reads its client's headers. A fresh process, so that no earlier
    test has had the answer cached; the SDK's own client shows the check sees the subprocess."""
    child = textwrap.dedent(
        """
        import sys
        spawned = []
        sys.addaudithook(lambda event, args: event == "subprocess.Popen" and spawned.append(args))
        import openai
        from agentworld.providers.openai import OpenAIProvider
        OpenAIProvider(api_key="k", base_url="http://127.0.0.1:9/v1")
        OpenAIProvider(api_key="k", base_url="https://api.example.com/v1")
        print(len(spawned))
        openai.AsyncOpenAI(api_key="k").default_headers
        print(len(spawned))
        """
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
    ours, with_the_sdks_client = map(int, done.stdout.split())
    assert ours == 0
    assert with_the_sdks_client > 0


def ok(body: bytes, content_type: str = "application/json") -> bytes:
    return response(body, f"Content-Type: {content_type}")


def failing(status: str, body: bytes, *headers: str) -> bytes:
    return response(body, *headers, status=status)


ANSWERS: dict[str, Callable[[Conn, bytes], bytes]] = {
    "500 with a message": lambda _c, _r: failing(
        "500 Internal Server Error", b'{"error":{"message":"trouble at the mill"}}',
        "Content-Type: application/json",
    ),
    "401 names the key's variable": lambda _c, _r: failing(
        "401 Unauthorized", b'{"error":{"message":"Incorrect API key provided: sk-test"}}',
        "Content-Type: application/json",
    ),
    "429 with retry-after": lambda _c, _r: failing(
        "429 Too Many Requests", b'{"error":{"message":"slow down"}}',
        "Content-Type: application/json", "Retry-After: 7",
    ),
    "400 JSON without a message": lambda _c, _r: failing(
        "400 Bad Request", b'{"error":{"code":"bad_thing","param":"model"}}',
        "Content-Type: application/json",
    ),
    "400 JSON that is not an object": lambda _c, _r: failing(
        "400 Bad Request", b'["a", "list"]', "Content-Type: application/json"
    ),
    "502 an HTML page": lambda _c, _r: failing(
        "502 Bad Gateway", b"<html><body>bad gateway</body></html>", "Content-Type: text/html"
    ),
    "304 not a success": lambda _c, _r: failing("304 Not Modified", b""),
    "200 plain text": lambda _c, _r: ok(b"just words", "text/plain"),
    "200 nothing at all": lambda _c, _r: response(b""),
    "200 JSON that is not JSON": lambda _c, _r: ok(b'{"choices": [oops'),
    "200 JSON that is not UTF-8": lambda _c, _r: ok(b'{"choices": "\xff\xfe"}'),
    "200 JSON of the wrong shape": lambda _c, _r: ok(b'{"choices": []}'),
    "200 cut short": lambda _c, _r: (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"
        + COMPLETION[:40]
    ),
}


async def outcome(provider: OpenAIProvider) -> LLMResponse | tuple[object, ...]:
    try:
        return await provider.complete(ask())
    except ProviderError as exc:
        return (
            type(exc),
            str(exc),
            getattr(exc, "status", None),
            getattr(exc, "retry_after", None),
            exc.retryable,
        )


@pytest.mark.parametrize("answer", ANSWERS.values(), ids=ANSWERS.keys())
async def test_every_failure_is_the_error_the_sdk_path_raises(
    answer: Callable[[Conn, bytes], bytes],
) -> None:
    async def answer_then_close(conn: Conn) -> None:
        if (request := await conn.request()) is not None:
            await conn.send(answer(conn, request))

    async with serving(answer_then_close) as server, both_paths(server) as (direct, through_sdk):
        mine, sdks = await outcome(direct), await outcome(through_sdk)
        endpoint = server.url

    assert isinstance(mine, tuple), "every answer here is a failure"
    assert mine == sdks
    assert endpoint in mine[1]


async def test_a_refused_connection_is_the_error_the_sdk_path_raises() -> None:
    with socket.socket() as sock:  # a port nothing listens on once it is closed
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    direct = OpenAIProvider(api_key="k", base_url=url, timeout=5.0)
    through_sdk = OpenAIProvider(
        api_key="k", client=sdk_client(api_key="k", base_url=url, timeout=5.0, max_connections=4)
    )
    try:
        mine, sdks = await outcome(direct), await outcome(through_sdk)
    finally:
        await direct.aclose()
        await through_sdk.aclose()

    assert mine == sdks
    assert isinstance(mine, tuple) and f"cannot reach {url}" in mine[1]


# -- streams ----------------------------------------------------------------------------------


def chunk(delta: dict[str, object], finish: str | None = None, **extra: object) -> bytes:
    event = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return b"data: " + json.dumps(event).encode() + b"\n\n"


USAGE = b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],' \
    b'"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}\n\n'
TEXT_EVENTS = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "an "}),
    chunk({"content": "answer"}),
    chunk({}, "stop"),
    USAGE,
    b"data: [DONE]\n\n",
]
TOOL_EVENTS = [
    chunk({"role": "assistant", "content": "checking"}),
    chunk({"tool_calls": [{"index": 1, "id": "b", "type": "function",
                           "function": {"name": "two", "arguments": ""}}]}),
    chunk({"tool_calls": [{"index": 0, "id": "a", "type": "function",
                           "function": {"name": "one", "arguments": '{"x":'}}]}),
    chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": " 1}"}}]}),
    chunk({}, "tool_calls"),
    USAGE,
    b"data: [DONE]\n\n",
]


def event_stream(*events: bytes, pieces: int = 1) -> Callable[[Conn], Awaitable[None]]:
    """A handler answering one request with ``events`` as a read-to-close event stream,
    written in ``pieces`` parts of equal size (so lines and events are cut anywhere)."""
    body = b"".join(events)

    async def handler(conn: Conn) -> None:
        if await conn.request() is None:
            return
        await conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        size = -(-len(body) // pieces)
        for start in range(0, len(body), size):
            await conn.send(body[start : start + size])
            await asyncio.sleep(0.005)

    return handler


async def streamed(provider: OpenAIProvider) -> tuple[object, ...]:
    fragments: list[str] = []
    try:
        answer = await provider.complete(ask(), stream=True, on_text=fragments.append)
    except ProviderError as exc:
        return (type(exc), str(exc), getattr(exc, "status", None), exc.retryable, fragments)
    return (answer, fragments)


STREAMS: dict[str, Callable[[Conn], Awaitable[None]]] = {
    "text": event_stream(*TEXT_EVENTS),
    "text in 40 pieces": event_stream(*TEXT_EVENTS, pieces=40),
    "text with CR line ends, in pieces": event_stream(
        *(e.replace(b"\n", b"\r") for e in TEXT_EVENTS), pieces=23
    ),
    "text with CR LF line ends, in pieces": event_stream(
        *(e.replace(b"\n", b"\r\n") for e in TEXT_EVENTS), pieces=37
    ),
    "comments and other fields": event_stream(
        b": keep-alive\n\n", b"event: message\nid: 1\nretry: 10\n", *TEXT_EVENTS
    ),
    "tool calls interleaved": event_stream(*TOOL_EVENTS, pieces=9),
    "no [DONE]": event_stream(*TEXT_EVENTS[:-1]),
    "an error event": event_stream(
        *TEXT_EVENTS[:2], b'data: {"error": {"message": "the model is overloaded"}}\n\n'
    ),
    "an error event without words": event_stream(b'data: {"error": {"code": 1}}\n\n'),
    "cut before the finish": event_stream(*TEXT_EVENTS[:3]),
    "an event that is not JSON": event_stream(*TEXT_EVENTS[:2], b"data: {oops\n\n"),
    "an event that is not UTF-8": event_stream(*TEXT_EVENTS[:2], b'data: {"x": "\xff"}\n\n'),
    "an error status": answering(
        lambda _c, _r: failing(
            "503 Service Unavailable", b'{"error":{"message":"busy"}}',
            "Content-Type: application/json",
        )
    ),
}


@pytest.mark.parametrize("answer", STREAMS.values(), ids=STREAMS.keys())
async def test_a_stream_reads_as_the_sdk_path_reads_it(
    answer: Callable[[Conn], Awaitable[None]],
) -> None:
    async with serving(answer) as server, both_paths(server) as (direct, through_sdk):
        mine, sdks = await streamed(direct), await streamed(through_sdk)

    assert mine == sdks


async def test_a_streamed_answer_is_read_whole_and_its_connection_kept() -> None:
    async def keep_alive(conn: Conn) -> None:
        body = b"".join(TEXT_EVENTS)
        while await conn.request() is not None:
            await conn.send(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                + b"Content-Length: %d\r\n\r\n" % len(body)
                + body
            )

    async with serving(keep_alive) as server, both_paths(server) as (direct, _):
        first, second = await streamed(direct), await streamed(direct)

    assert first == second
    answer, fragments = first
    assert isinstance(answer, LLMResponse)
    assert (answer.content, fragments) == ("an answer", ["an ", "answer"])
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (7, 3)
    assert server.connections == 1
    (line, headers, body), _ = map(sent, server.requests)
    assert json.loads(body)["stream"] is True
    assert json.loads(body)["stream_options"] == {"include_usage": True}


async def test_a_stream_left_early_closes_its_connection_at_once() -> None:
    closed = asyncio.Event()

    async def stalls(conn: Conn) -> None:
        if await conn.request() is None:
            return
        await conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        await conn.send(b"".join(TEXT_EVENTS[:2]))
        await conn.until_closed()  # nothing more: the client must be the one to close
        closed.set()

    def refuse(_text: str) -> None:
        raise RuntimeError("the consumer gave up")

    async with serving(stalls) as server, both_paths(server) as (direct, _):
        with pytest.raises(RuntimeError, match="gave up"):
            await direct.complete(ask(), stream=True, on_text=refuse)
        await asyncio.wait_for(closed.wait(), timeout=2.0)


@pytest.mark.parametrize("line_end", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
@pytest.mark.parametrize("size", [1, 2, 3, 1000])
async def test_events_are_the_same_however_the_body_is_cut(line_end: bytes, size: int) -> None:
    body = (
        b": a comment\n"
        b"data: one\n\n"
        b"event: x\ndata: two\ndata:  three\nid: 4\n\n"
        b"\n\n"
        b"data\n\n"
        b"data: caf\xc3\xa9\n\n"
        b"data: never ended"
    ).replace(b"\n", line_end)

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(body), size):
            yield body[start : start + size]

    assert [data async for data in event_data(pieces())] == ["one", "two\n three", "", "café"]
