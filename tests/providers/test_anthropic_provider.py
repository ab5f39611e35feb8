"""AnthropicProvider through the official SDK against a loopback server (SPEC L1, L2, L4, L5).

Every provider test goes over real HTTP: the SDK frames the request, the server
answers in Anthropic's JSON or SSE format, and the provider maps what comes
back. The conversion and stream-assembly functions are also tested directly.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from agentworld.errors import ProviderConnectionError, ProviderError, ProviderResponseError
from agentworld.models import LLMResponse, ToolCall, Usage
from agentworld.providers.anthropic import AnthropicProvider, to_anthropic_messages, tool_input
from agentworld.providers.anthropic_stream import AnthropicStreamAssembler
from agentworld.providers.base import LLMRequest, PromptMessage, ToolSpec
from agentworld.testing.anthropic_wire import AnthropicWireServer, Reply, ToolCallSpec

MODEL = "claude-wire-test"
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "units": {"type": "string", "enum": ["metric", "imperial"]},
            "details": {"type": "array", "items": {"type": "string"}},
            "where": {
                "type": "object",
                "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                "required": ["lat", "lon"],
            },
        },
        "required": ["city"],
    },
)
CLOCK = ToolSpec(name="get_time", description="The current time.")

# Written as json.dumps writes them, so the streamed text and the re-serialised
# non-streamed input are the same string (non-ASCII kept as is).
ARGS_A = json.dumps(
    {"city": "Zürich", "units": "metric", "details": ["wind", "rain"]}, ensure_ascii=False
)
ARGS_B = json.dumps({"timezone": "Europe/Berlin", "format": "%H:%M:%S"})
TEXT = "The quick brown fox jumps over the lazy dog, then naps in the sun."


def user_request(text: str = "hello there", **kw: Any) -> LLMRequest:
    messages = [
        PromptMessage(role="system", content="You are terse."),
        PromptMessage(role="user", content=text),
    ]
    return LLMRequest(model=MODEL, messages=messages, **kw)


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicWireServer]:
    with AnthropicWireServer() as server:
        yield server


@pytest.fixture
async def provider(anthropic_server: AnthropicWireServer) -> AsyncIterator[AnthropicProvider]:
    p = AnthropicProvider(api_key="k", base_url=anthropic_server.base_url, api_key_env="MY_KEY_VAR")
    try:
        yield p
    finally:
        await p.aclose()


async def complete(
    provider: AnthropicProvider, request: LLMRequest, *, stream: bool
) -> tuple[LLMResponse, list[str]]:
    fragments: list[str] = []
    response = await provider.complete(request, stream=stream, on_text=fragments.append)
    return response, fragments


def two_calls(**kw: Any) -> Reply:
    return Reply.tools(
        ToolCallSpec(name="get_weather", arguments=ARGS_A, id="toolu_weather_1"),
        ToolCallSpec(name="get_time", arguments=ARGS_B, id="toolu_time_2"),
        chunk_size=3,
        **kw,
    )


# --- text ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_streamed_and_plain_text_replies_are_the_same_response(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider, stream: bool
) -> None:
    anthropic_server.enqueue(Reply.text(TEXT, chunk_size=5, prompt_tokens=11, completion_tokens=14))

    response, fragments = await complete(provider, user_request(), stream=stream)

    assert response == LLMResponse(
        type="text", content=TEXT, usage=Usage(input_tokens=11, output_tokens=14), model=MODEL
    )
    if stream:
        assert len(fragments) == len(range(0, len(TEXT), 5))  # one callback per delta
        assert "".join(fragments) == TEXT
    else:
        assert fragments == []


async def test_async_text_callback_is_awaited(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider
) -> None:
    anthropic_server.enqueue(Reply.text("abcdefghij", chunk_size=2))
    seen: list[str] = []

    async def on_text(fragment: str) -> None:
        seen.append(fragment)

    response = await provider.complete(user_request(), stream=True, on_text=on_text)

    assert seen == ["ab", "cd", "ef", "gh", "ij"]
    assert response.content == "abcdefghij"


@pytest.mark.parametrize("stream", [True, False])
async def test_system_prompt_is_the_top_level_system_parameter(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider, stream: bool
) -> None:
    response = await provider.complete(user_request("four five"), stream=stream)

    [body] = anthropic_server.requests
    assert body["system"] == "You are terse."
    assert body["messages"] == [{"role": "user", "content": "four five"}]
    assert body["model"] == MODEL
    assert body["max_tokens"] == 4096  # required by Anthropic: the provider's default
    assert "tools" not in body and "temperature" not in body
    assert bool(body.get("stream")) is stream
    # The server counts words: "You are terse." + "four five" in, "echo: four five" out.
    assert response.usage == Usage(input_tokens=5, output_tokens=3)


async def test_max_tokens_comes_from_the_request_or_the_provider_default(
    anthropic_server: AnthropicWireServer,
) -> None:
    provider = AnthropicProvider(
        api_key="k", base_url=anthropic_server.base_url, max_tokens_default=99
    )
    try:
        await provider.complete(user_request())
        await provider.complete(user_request(max_tokens=64), stream=True)
    finally:
        await provider.aclose()

    assert [body["max_tokens"] for body in anthropic_server.requests] == [99, 64]


async def test_the_api_key_is_sent_with_an_anthropic_version(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider
) -> None:
    await provider.complete(user_request())

    [headers] = anthropic_server.headers
    assert "k" in (
        headers.get("x-api-key"),
        headers.get("authorization", "").removeprefix("Bearer "),
    )
    assert headers["anthropic-version"]


# --- tool calls ------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_one_tool_call_with_text_before_it(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider, stream: bool
) -> None:
    anthropic_server.enqueue(
        Reply.tools(
            ToolCallSpec("get_time", "{}", id="toolu_x"), content="Let me check.", chunk_size=4
        )
    )

    response, fragments = await complete(provider, user_request(tools=[CLOCK]), stream=stream)

    assert response.type == "tool_calls"
    assert response.content == "Let me check."
    assert response.tool_calls == [ToolCall.of("toolu_x", "get_time", "{}")]
    assert "".join(fragments) == ("Let me check." if stream else "")


@pytest.mark.parametrize("stream", [True, False])
async def test_parallel_tool_calls_come_back_in_order_with_exact_ids_and_arguments(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider, stream: bool
) -> None:
    anthropic_server.enqueue(two_calls(prompt_tokens=30, completion_tokens=20))

    response, fragments = await complete(
        provider, user_request(tools=[WEATHER, CLOCK]), stream=stream
    )

    assert response == LLMResponse(
        type="tool_calls",
        tool_calls=[
            ToolCall.of("toolu_weather_1", "get_weather", ARGS_A),
            ToolCall.of("toolu_time_2", "get_time", ARGS_B),
        ],
        usage=Usage(input_tokens=30, output_tokens=20),
        model=MODEL,
    )
    assert fragments == []


async def test_streamed_and_plain_tool_call_replies_are_the_same_response(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider
) -> None:
    # Compactly written arguments: both modes still agree on one JSON text.
    compact = ToolCallSpec("get_weather", '{"city":"Zürich","n":[1,2]}', id="toolu_c")
    anthropic_server.enqueue(Reply.tools(compact, chunk_size=2), Reply.tools(compact))
    request = user_request(tools=[WEATHER])

    streamed = await provider.complete(request, stream=True)
    plain = await provider.complete(request, stream=False)

    assert streamed == plain
    assert json.loads(streamed.tool_calls[0].function.arguments) == {"city": "Zürich", "n": [1, 2]}


async def test_tools_are_sent_in_anthropic_format_with_the_schema_unchanged(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider
) -> None:
    await provider.complete(user_request(tools=[WEATHER, CLOCK]))

    assert anthropic_server.requests[-1]["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "input_schema": WEATHER.parameters,
        },
        {
            "name": "get_time",
            "description": "The current time.",
            "input_schema": {"type": "object", "properties": {}},
        },
    ]


@pytest.mark.parametrize("stream", [True, False])
async def test_tool_results_go_back_as_one_user_turn_of_tool_result_blocks(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider, stream: bool
) -> None:
    anthropic_server.enqueue(
        two_calls(content="Checking both."), Reply.text("Sunny, and it is noon.")
    )
    first = user_request("weather and time?", tools=[WEATHER, CLOCK])
    asked = await provider.complete(first, stream=stream)

    follow_up = LLMRequest(
        model=MODEL,
        tools=[WEATHER, CLOCK],
        messages=[
            *first.messages,
            PromptMessage(
                role="assistant", content=asked.content, tool_calls=tuple(asked.tool_calls)
            ),
            PromptMessage(
                role="tool", content='{"sky": "sunny"}', tool_call_id=asked.tool_calls[0].id
            ),
            PromptMessage(role="tool", content="12:00:00", tool_call_id=asked.tool_calls[1].id),
        ],
    )
    answer = await provider.complete(follow_up, stream=stream)

    assert answer.content == "Sunny, and it is noon."
    body = anthropic_server.requests[-1]
    assert body["system"] == "You are terse."
    assert body["messages"] == [
        {"role": "user", "content": "weather and time?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking both."},
                {
                    "type": "tool_use",
                    "id": "toolu_weather_1",
                    "name": "get_weather",
                    "input": json.loads(ARGS_A),
                },
                {
                    "type": "tool_use",
                    "id": "toolu_time_2",
                    "name": "get_time",
                    "input": json.loads(ARGS_B),
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_weather_1",
                    "content": '{"sky": "sunny"}',
                },
                {"type": "tool_result", "tool_use_id": "toolu_time_2", "content": "12:00:00"},
            ],
        },
    ]


# --- conversion (pure) -----------------------------------------------------------------------


def test_consecutive_turns_of_one_role_are_merged_and_tool_results_lead() -> None:
    call = ToolCall.of("toolu_1", "f", '{"a": 1}')
    system, messages = to_anthropic_messages(
        [
            PromptMessage(role="system", content="one"),
            PromptMessage(role="user", content="hi"),
            PromptMessage(role="user", content="again"),
            PromptMessage(role="system", content="two"),
            PromptMessage(role="assistant", tool_calls=(call,)),
            PromptMessage(role="user", content="while you work"),
            PromptMessage(role="tool", content="done", tool_call_id="toolu_1"),
            PromptMessage(role="assistant", content=""),  # empty: Anthropic rejects it
            PromptMessage(role="assistant", content="ok"),
        ]
    )

    assert system == "one\n\ntwo"
    assert messages == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "again"}],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"},
                {"type": "text", "text": "while you work"},
            ],
        },
        {"role": "assistant", "content": "ok"},
    ]


def test_no_system_messages_means_no_system_parameter() -> None:
    assert to_anthropic_messages([PromptMessage(role="user", content="x")]) == (
        None,
        [{"role": "user", "content": "x"}],
    )


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": [1, {"b": null}]}', {"a": [1, {"b": None}]}),
        ("", {}),
        ("{not json", {"_raw": "{not json"}),
        ("[1, 2]", {"_raw": "[1, 2]"}),
        # Refused by the runtime, and no JSON encoder (the SDK's) would send the number.
        ('{"timeout": NaN}', {"_raw": '{"timeout": NaN}'}),
        ('{"timeout": 1e400}', {"_raw": '{"timeout": 1e400}'}),
    ],
)
def test_tool_input_is_always_an_object(arguments: str, expected: dict[str, Any]) -> None:
    assert tool_input(arguments) == expected


# --- stream assembly (pure) ------------------------------------------------------------------


def test_assembler_counts_cached_input_and_takes_the_final_output_total() -> None:
    assembler = AnthropicStreamAssembler()
    usage = {
        "input_tokens": 5,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 7,
        "output_tokens": 1,
    }
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"model": "m", "usage": usage}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "hm"},
        },
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "t", "name": "f"},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": '{"x":'},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": " 1}"},
        },
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 42},
        },
    ]

    texts = [assembler.feed(event) for event in events]

    assert [t for t in texts if t] == ["Hi"]  # thinking is not streamed as answer text
    assert not assembler.finished
    assembler.feed({"type": "message_stop"})
    assert assembler.finished
    assert assembler.response() == LLMResponse(
        type="tool_calls",
        content="Hi",
        tool_calls=[ToolCall.of("t", "f", '{"x": 1}')],
        usage=Usage(input_tokens=112, output_tokens=42),
        model="m",
    )


def test_assembler_keeps_invalid_streamed_json_for_the_runtime_to_report() -> None:
    assembler = AnthropicStreamAssembler()
    assembler.feed(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "f"},
        }
    )
    assembler.feed(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"x": '},
        }
    )

    assert assembler.response().tool_calls == [ToolCall.of("t", "f", '{"x": ')]


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_401_names_the_api_key_variable(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider, stream: bool
) -> None:
    anthropic_server.enqueue(Reply.error(401, "invalid x-api-key"))

    with pytest.raises(ProviderResponseError) as info:
        await provider.complete(user_request(), stream=stream)

    assert info.value.status == 401
    assert "MY_KEY_VAR" in str(info.value)
    assert "invalid x-api-key" in str(info.value)
    assert not info.value.retryable


@pytest.mark.parametrize("stream", [True, False])
async def test_400_is_not_retryable_and_carries_the_server_message(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider, stream: bool
) -> None:
    message = "messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks"
    anthropic_server.enqueue(Reply.error(400, message))

    with pytest.raises(ProviderResponseError) as info:
        await provider.complete(user_request(), stream=stream)

    assert info.value.status == 400
    assert not info.value.retryable
    assert info.value.body == message
    assert message in str(info.value)


@pytest.mark.parametrize("status", [429, 500, 529])
@pytest.mark.parametrize("stream", [True, False])
async def test_rate_limits_and_server_errors_are_retryable(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider, status: int, stream: bool
) -> None:
    anthropic_server.enqueue(Reply.error(status, f"trouble {status}", headers={"retry-after": "3"}))

    with pytest.raises(ProviderResponseError) as info:
        await provider.complete(user_request(), stream=stream)

    assert info.value.status == status
    assert info.value.retryable
    assert info.value.retry_after == 3.0
    assert f"trouble {status}" in str(info.value)
    assert len(anthropic_server.requests) == 1  # the SDK's own retries are off


async def test_an_error_event_inside_a_stream_is_retryable_like_its_status(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider
) -> None:
    anthropic_server.enqueue(Reply.error(529, "Overloaded", content="partial", drop_stream_after=4))

    with pytest.raises(ProviderResponseError) as info:
        await provider.complete(user_request(), stream=True)

    assert info.value.status == 529  # from the error type; the HTTP status was 200
    assert info.value.retryable
    assert "Overloaded" in str(info.value)


def closed_port_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("stream", [True, False])
async def test_connection_refused_is_a_retryable_connection_error_naming_the_url(
    stream: bool,
) -> None:
    url = closed_port_url()
    provider = AnthropicProvider(api_key="k", base_url=url)
    try:
        with pytest.raises(ProviderConnectionError) as info:
            await provider.complete(user_request(), stream=stream)
    finally:
        await provider.aclose()

    assert info.value.retryable
    assert info.value.url is not None and info.value.url.rstrip("/") == url
    assert url in str(info.value)


@pytest.mark.parametrize("drop_after", [0, 1, 5, 30])
async def test_dropped_stream_is_a_retryable_connection_error(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider, drop_after: int
) -> None:
    anthropic_server.enqueue(two_calls(content=TEXT, drop_stream_after=drop_after))

    with pytest.raises(ProviderConnectionError) as info:
        await provider.complete(user_request(), stream=True, on_text=lambda _: None)

    assert info.value.retryable
    assert anthropic_server.base_url in str(info.value)


async def test_timeout_is_a_connection_error(anthropic_server: AnthropicWireServer) -> None:
    anthropic_server.enqueue(Reply.text("late", delay=2.0))
    provider = AnthropicProvider(api_key="k", base_url=anthropic_server.base_url, timeout=0.2)
    try:
        with pytest.raises(ProviderConnectionError) as info:
            await provider.complete(user_request())
    finally:
        await provider.aclose()

    assert info.value.retryable


async def test_every_failure_is_a_provider_error(
    anthropic_server: AnthropicWireServer, provider: AnthropicProvider
) -> None:
    """Callers catch one root: no SDK exception escapes the provider."""
    anthropic_server.enqueue(Reply.error(404, "model: claude-nope"))

    with pytest.raises(ProviderError) as info:
        await provider.complete(user_request())

    assert isinstance(info.value, ProviderResponseError)
    assert info.value.status == 404
    assert "claude-nope" in str(info.value)
