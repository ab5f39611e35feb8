"""Drive the loopback Anthropic wire server through the real ``anthropic`` SDK."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import httpx2
import pytest

from agentworld.testing.anthropic_wire import AnthropicWireServer, DropMode, Reply, ToolCallSpec
from agentworld.testing.processes import module_server, stop_process

MODEL = "claude-wire-test"
MSGS: Any = [{"role": "user", "content": "hello there world"}]
TOOLS: Any = [
    {
        "name": "get_weather",
        "description": "Weather for a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


@pytest.fixture
def server() -> Iterator[AnthropicWireServer]:
    with AnthropicWireServer() as srv:
        yield srv


@pytest.fixture
async def client(server: AnthropicWireServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        base_url=server.base_url, api_key="test-key", max_retries=0
    ) as c:
        yield c


async def create(client: anthropic.AsyncAnthropic, **kw: Any) -> Any:
    return await client.messages.create(
        **({"model": MODEL, "max_tokens": 256, "messages": MSGS} | kw)
    )


async def events_of(client: anthropic.AsyncAnthropic, **kw: Any) -> list[Any]:
    stream = await create(client, stream=True, **kw)
    async with stream:
        return [event async for event in stream]


async def test_non_streaming_text(
    server: AnthropicWireServer, client: anthropic.AsyncAnthropic
) -> None:
    server.enqueue(Reply.text("Hi from the wire", prompt_tokens=7, completion_tokens=4))

    message = await create(client)

    assert message.id.startswith("msg_")
    assert (message.type, message.role, message.model) == ("message", "assistant", MODEL)
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "Hi from the wire"
    assert message.stop_reason == "end_turn"
    assert message.stop_sequence is None
    assert (message.usage.input_tokens, message.usage.output_tokens) == (7, 4)


async def test_default_echo_responder_counts_words_including_system(
    client: anthropic.AsyncAnthropic,
) -> None:
    message = await create(client, system="be brief")

    assert message.content[0].text == "echo: hello there world"
    assert message.usage.input_tokens == 5  # "be brief" + "hello there world"
    assert message.usage.output_tokens == 4


async def test_streamed_text_has_anthropic_event_sequence(
    server: AnthropicWireServer, client: anthropic.AsyncAnthropic
) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    server.enqueue(Reply.text(text, chunk_size=5, prompt_tokens=3, completion_tokens=9))

    events = await events_of(client)

    kinds = [event.type for event in events]
    deltas = len(range(0, len(text), 5))
    assert kinds == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * deltas,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]  # the ping the server sends after message_start is dropped by the SDK
    start = events[0].message
    assert start.id.startswith("msg_") and start.model == MODEL and start.content == []
    assert start.usage.input_tokens == 3
    assert events[1].content_block.type == "text"
    assert "".join(e.delta.text for e in events[2:-3]) == text
    assert all(e.delta.type == "text_delta" and e.index == 0 for e in events[2:-3])
    assert events[-2].delta.stop_reason == "end_turn"
    assert events[-2].usage.output_tokens == 9


async def test_non_streaming_tool_call(
    server: AnthropicWireServer, client: anthropic.AsyncAnthropic
) -> None:
    server.enqueue(Reply.tools(ToolCallSpec("get_weather", '{"city": "Oslo"}'), content="checking"))

    message = await create(client, tools=TOOLS)

    assert message.stop_reason == "tool_use"
    text, call = message.content
    assert (text.type, text.text) == ("text", "checking")
    assert call.type == "tool_use"
    assert call.id.startswith("toolu_")
    assert (call.name, call.input) == ("get_weather", {"city": "Oslo"})


async def test_streamed_parallel_tool_calls_split_input_across_deltas(
    server: AnthropicWireServer, client: anthropic.AsyncAnthropic
) -> None:
    args_a = json.dumps({"city": "Paris", "units": "metric"})
    args_b = json.dumps({"city": "Reykjavík", "days": [1, 2, 3]})
    server.enqueue(
        Reply.tools(
            ToolCallSpec("get_weather", args_a, id="toolu_abc"),
            ToolCallSpec("get_forecast", args_b),
            chunk_size=6,
        )
    )

    events = await events_of(client, tools=TOOLS)

    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        if event.type == "content_block_start":
            block = event.content_block
            assert block.type == "tool_use" and block.input == {}
            blocks[event.index] = {"id": block.id, "name": block.name, "json": [], "stopped": False}
        elif event.type == "content_block_delta":
            assert event.delta.type == "input_json_delta"
            blocks[event.index]["json"].append(event.delta.partial_json)
        elif event.type == "content_block_stop":
            blocks[event.index]["stopped"] = True
    assert sorted(blocks) == [0, 1]
    assert blocks[0]["id"] == "toolu_abc" and blocks[0]["name"] == "get_weather"
    assert blocks[1]["id"].startswith("toolu_") and blocks[1]["name"] == "get_forecast"
    assert "".join(blocks[0]["json"]) == args_a
    assert "".join(blocks[1]["json"]) == args_b
    assert all(len(b["json"]) > 2 and b["stopped"] for b in blocks.values())
    assert all(b["json"][0] == "" for b in blocks.values())  # as the real API starts
    assert events[-2].delta.stop_reason == "tool_use"


async def test_auto_tool_use_ids_are_unique(
    server: AnthropicWireServer, client: anthropic.AsyncAnthropic
) -> None:
    spec = ToolCallSpec("f", "{}")
    server.enqueue(Reply.tools(spec, spec), Reply.tools(spec))

    ids = [block.id for _ in range(2) for block in (await create(client)).content]

    assert len(ids) == len(set(ids)) == 3


@pytest.mark.parametrize(
    ("status", "exc", "kind"),
    [
        (400, anthropic.BadRequestError, "invalid_request_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
        (404, anthropic.NotFoundError, "not_found_error"),
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (529, anthropic.InternalServerError, "overloaded_error"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_error_status_maps_to_typed_exception(
    server: AnthropicWireServer,
    client: anthropic.AsyncAnthropic,
    status: int,
    exc: type[anthropic.APIStatusError],
    kind: str,
    stream: bool,
) -> None:
    server.enqueue(Reply.error(status, f"boom {status}", headers={"retry-after": "7"}))

    with pytest.raises(exc) as info:
        await create(client, stream=stream)

    error = info.value
    assert error.status_code == status
    assert error.api_message == f"boom {status}"
    assert error.type == kind
    assert error.request_id is not None and error.request_id.startswith("req_")
    assert error.response.headers["retry-after"] == "7"
    assert isinstance(error.body, dict) and error.body["type"] == "error"


async def test_error_inside_a_stream_is_an_error_event(
    server: AnthropicWireServer, client: anthropic.AsyncAnthropic
) -> None:
    server.enqueue(Reply.error(529, "Overloaded", drop_stream_after=3))
    stream = await create(client, stream=True)

    seen: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as info:
        async with stream:
            async for event in stream:
                seen.append(event.type)

    assert seen == ["message_start", "message_delta"]  # plus a ping, which the SDK skips
    assert info.value.status_code == 200  # the HTTP status; the error type says what went wrong
    assert (info.value.type, info.value.api_message) == ("overloaded_error", "Overloaded")


async def test_missing_required_fields_are_400(client: anthropic.AsyncAnthropic) -> None:
    for body, field in [
        ({"model": "m", "messages": MSGS}, "max_tokens"),
        ({"model": "m", "max_tokens": 5}, "messages"),
    ]:
        with pytest.raises(anthropic.BadRequestError, match=field) as info:
            await client.post("/v1/messages", body=body, cast_to=object)
        assert info.value.type == "invalid_request_error"


async def test_requests_and_headers_are_recorded(
    server: AnthropicWireServer, client: anthropic.AsyncAnthropic
) -> None:
    await create(client, model="a", tools=TOOLS, system="sys")
    await events_of(client, model="b")

    first, second = server.requests
    assert (first["model"], second["model"]) == ("a", "b")
    assert first["tools"] == TOOLS
    assert first["system"] == "sys"
    assert first["messages"] == MSGS
    assert first["max_tokens"] == 256
    assert second["stream"] is True
    headers = server.headers
    assert len(headers) == 2
    for sent in headers:
        # SDK 2.x sends the API key as a bearer token; older ones used x-api-key.
        assert "test-key" in (
            sent.get("x-api-key"),
            sent.get("authorization", "").removeprefix("Bearer "),
        )
        assert sent["anthropic-version"]
        assert sent["content-type"] == "application/json"
    server.enqueue(Reply.text("queued"))
    server.clear()
    assert server.requests == [] and server.headers == []
    assert (await create(client)).content[0].text == "echo: hello there world"  # queue cleared


async def test_dropped_stream_raises_and_client_recovers(
    server: AnthropicWireServer, client: anthropic.AsyncAnthropic
) -> None:
    server.enqueue(Reply.text("x" * 100, chunk_size=2, drop_stream_after=6))
    stream = await create(client, stream=True)

    seen = 0
    # A cut body is not wrapped by the SDK: the raw httpx2 transport error escapes.
    with pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)):
        async with stream:
            async for _ in stream:
                seen += 1

    assert seen == 5  # six events written, one of them the ping
    assert (await create(client)).content[0].text == "echo: hello there world"


@pytest.mark.parametrize("mode", ["end", "end_mid_event"])
async def test_stream_ended_early_closes_cleanly_without_message_stop(
    server: AnthropicWireServer, client: anthropic.AsyncAnthropic, mode: DropMode
) -> None:
    server.enqueue(Reply.text("x" * 100, chunk_size=2, drop_stream_after=6, drop_mode=mode))
    raw = await client.messages.with_raw_response.create(
        model=MODEL, max_tokens=256, messages=MSGS, stream=True
    )
    assert raw.headers["connection"] == "close"
    stream = await raw.parse()

    async with stream:
        events = [event async for event in stream]  # no error: the body ended properly

    # Six events written, one of them the ping; the stream ends inside the text block.
    assert [e.type for e in events] == ["message_start", "content_block_start"] + [
        "content_block_delta"
    ] * 3
    assert (await create(client)).content[0].text == "echo: hello there world"


async def test_error_reply_with_a_drop_still_sends_the_error_event(
    server: AnthropicWireServer, client: anthropic.AsyncAnthropic
) -> None:
    server.enqueue(Reply.error(529, "Overloaded", drop_stream_after=2, drop_mode="end"))
    stream = await create(client, stream=True)

    with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
        async with stream:
            async for _ in stream:
                pass


async def test_delay_triggers_sdk_timeout(server: AnthropicWireServer) -> None:
    server.enqueue(Reply.text("late", delay=2.0))
    async with anthropic.AsyncAnthropic(
        base_url=server.base_url, api_key="t", max_retries=0, timeout=0.2
    ) as c:
        with pytest.raises(anthropic.APITimeoutError):
            await create(c)


async def test_keep_alive_sequential_calls(client: anthropic.AsyncAnthropic) -> None:
    for i in range(10):
        if i % 2:
            events = await events_of(client)
            text = "".join(e.delta.text for e in events if e.type == "content_block_delta")
        else:
            text = (await create(client)).content[0].text
        assert text == "echo: hello there world"


def test_sync_client_and_models_endpoint(server: AnthropicWireServer) -> None:
    with anthropic.Anthropic(base_url=server.base_url, api_key="t", max_retries=0) as c:
        assert [m.id for m in c.models.list()] == ["wire-test"]
        message = c.messages.create(model=MODEL, max_tokens=10, messages=MSGS)
    assert message.content[0].text == "echo: hello there world"


def test_runs_as_a_process() -> None:
    with module_server("agentworld.testing.anthropic_wire") as (base_url, proc):
        assert base_url.startswith("http://127.0.0.1:")
        with anthropic.Anthropic(base_url=base_url, api_key="t", max_retries=0) as c:
            message = c.messages.create(model=MODEL, max_tokens=10, messages=MSGS)
        assert message.content[0].text == "echo: hello there world"
        assert stop_process(proc) == 0
