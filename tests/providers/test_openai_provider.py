"""OpenAIProvider through the official SDK against a loopback server (SPEC L1, L2, L4, L5).

Every test goes over real HTTP: the SDK frames the request, the server answers
in OpenAI's JSON or SSE format, and the provider maps what comes back.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator

import pytest

from agentworld.errors import ProviderConnectionError, ProviderError, ProviderResponseError
from agentworld.models import LLMResponse, ToolCall, Usage
from agentworld.providers.base import LLMRequest, PromptMessage, ToolSpec
from agentworld.providers.openai import OpenAIProvider
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
CLOCK = ToolSpec(name="get_time", description="The current time.")

ARGS_A = '{"city": "Paris", "units": "metric", "details": ["wind", "rain"]}'
ARGS_B = '{"timezone": "Europe/Berlin", "format": "%H:%M:%S"}'


def user_request(text: str = "hello there", **kw: object) -> LLMRequest:
    return LLMRequest(
        model="gpt-test",
        messages=[
            PromptMessage(role="system", content="You are terse."),
            PromptMessage(role="user", content=text),
        ],
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
async def provider(openai_server: OpenAIWireServer) -> AsyncIterator[OpenAIProvider]:
    p = OpenAIProvider(api_key="k", base_url=openai_server.base_url, api_key_env="MY_KEY_VAR")
    try:
        yield p
    finally:
        await p.aclose()


async def complete(
    provider: OpenAIProvider, request: LLMRequest, *, stream: bool
) -> tuple[LLMResponse, list[str]]:
    fragments: list[str] = []
    response = await provider.complete(request, stream=stream, on_text=fragments.append)
    return response, fragments


# --- text ------------------------------------------------------------------------------------


async def test_text_reply_content_usage_and_request_body(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.enqueue(Reply.text("Bonjour!", prompt_tokens=17, completion_tokens=3))

    response = await provider.complete(user_request(temperature=0.3, max_tokens=64))

    assert response.type == "text"
    assert response.content == "Bonjour!"
    assert response.tool_calls == []
    assert response.usage == Usage(input_tokens=17, output_tokens=3)
    assert response.model == "gpt-test"

    [body] = openai_server.requests
    assert body["model"] == "gpt-test"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hello there"},
    ]
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 64
    assert "tools" not in body
    assert not body.get("stream")


@pytest.mark.parametrize("stream", [True, False])
async def test_unset_sampling_options_are_not_sent(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, stream: bool
) -> None:
    await provider.complete(user_request(), stream=stream)

    [body] = openai_server.requests
    assert "temperature" not in body
    assert "max_tokens" not in body
    assert "tools" not in body


async def test_streaming_sends_stream_flag_and_asks_for_usage(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    await provider.complete(user_request(), stream=True)

    [body] = openai_server.requests
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


TEXT = "The quick brown fox jumps over the lazy dog, then naps in the sun."


@pytest.mark.parametrize("stream", [True, False])
async def test_streamed_and_plain_text_replies_are_the_same_response(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, stream: bool
) -> None:
    openai_server.enqueue(Reply.text(TEXT, chunk_size=5, prompt_tokens=11, completion_tokens=14))

    response, fragments = await complete(provider, user_request(), stream=stream)

    assert response == LLMResponse(
        type="text", content=TEXT, usage=Usage(input_tokens=11, output_tokens=14), model="gpt-test"
    )
    if stream:
        assert len(fragments) == len(range(0, len(TEXT), 5))  # one callback per delta
        assert "".join(fragments) == TEXT
    else:
        assert fragments == []  # on_text is for streaming only


async def test_async_text_callback_is_awaited(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.enqueue(Reply.text("abcdefghij", chunk_size=2))
    seen: list[str] = []

    async def on_text(fragment: str) -> None:
        seen.append(fragment)

    response = await provider.complete(user_request(), stream=True, on_text=on_text)

    assert seen == ["ab", "cd", "ef", "gh", "ij"]
    assert response.content == "abcdefghij"


async def test_streamed_usage_defaults_to_server_count(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.enqueue(Reply.text("one two three"))

    response = await provider.complete(user_request("four five"), stream=True)

    # The server counts words: "You are terse." + "four five" in, "one two three" out.
    assert response.usage == Usage(input_tokens=5, output_tokens=3)


# --- tool calls ------------------------------------------------------------------------------


def two_calls(**kw: object) -> Reply:
    return Reply.tools(
        ToolCallSpec(name="get_weather", arguments=ARGS_A, id="call_weather_1"),
        ToolCallSpec(name="get_time", arguments=ARGS_B, id="call_time_2"),
        chunk_size=3,
        **kw,
    )


@pytest.mark.parametrize("stream", [True, False])
async def test_parallel_tool_calls_come_back_in_order_with_exact_ids_and_arguments(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, stream: bool
) -> None:
    openai_server.enqueue(two_calls(prompt_tokens=30, completion_tokens=20))
    request = user_request("weather and time?", tools=[WEATHER, CLOCK])

    response, fragments = await complete(provider, request, stream=stream)

    assert response.type == "tool_calls"
    assert response.tool_calls == [
        ToolCall.of("call_weather_1", "get_weather", ARGS_A),
        ToolCall.of("call_time_2", "get_time", ARGS_B),
    ]
    assert response.content == ""
    assert response.usage == Usage(input_tokens=30, output_tokens=20)
    assert fragments == []  # no text deltas in a tool-calls-only answer


async def test_streamed_and_plain_tool_call_replies_are_the_same_response(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    openai_server.enqueue(two_calls(prompt_tokens=9, completion_tokens=8))
    openai_server.enqueue(two_calls(prompt_tokens=9, completion_tokens=8))
    request = user_request(tools=[WEATHER, CLOCK])

    streamed = await provider.complete(request, stream=True)
    plain = await provider.complete(request, stream=False)

    assert streamed == plain


@pytest.mark.parametrize("stream", [True, False])
async def test_text_next_to_tool_calls_is_kept(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, stream: bool
) -> None:
    openai_server.enqueue(
        Reply.tools(
            ToolCallSpec(name="get_time", arguments="{}", id="call_x"),
            content="Let me check.",
            chunk_size=4,
        )
    )

    response, fragments = await complete(provider, user_request(tools=[CLOCK]), stream=stream)

    assert response.type == "tool_calls"
    assert response.content == "Let me check."
    assert response.tool_calls == [ToolCall.of("call_x", "get_time", "{}")]
    assert "".join(fragments) == ("Let me check." if stream else "")


async def test_tools_are_sent_in_openai_function_format(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    await provider.complete(user_request(tools=[WEATHER, CLOCK]))

    assert openai_server.requests[-1]["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "get_time",
                "description": "The current time.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]


@pytest.mark.parametrize("stream", [True, False])
async def test_tool_call_round_trip_serialises_assistant_calls_and_tool_results(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, stream: bool
) -> None:
    openai_server.enqueue(two_calls(), Reply.text("Sunny, and it is noon."))
    first = user_request("weather and time?", tools=[WEATHER, CLOCK])
    calls = (await provider.complete(first, stream=stream)).tool_calls

    follow_up = LLMRequest(
        model="gpt-test",
        tools=[WEATHER, CLOCK],
        messages=[
            *first.messages,
            PromptMessage(role="assistant", tool_calls=tuple(calls)),
            PromptMessage(role="tool", content='{"sky": "sunny"}', tool_call_id=calls[0].id),
            PromptMessage(role="tool", content="12:00:00", tool_call_id=calls[1].id),
        ],
    )
    answer = await provider.complete(follow_up, stream=stream)

    assert answer.content == "Sunny, and it is noon."
    messages = openai_server.requests[-1]["messages"]
    assert messages[2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_weather_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ARGS_A},
                },
                {
                    "id": "call_time_2",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": ARGS_B},
                },
            ],
        },
        {"role": "tool", "content": '{"sky": "sunny"}', "tool_call_id": "call_weather_1"},
        {"role": "tool", "content": "12:00:00", "tool_call_id": "call_time_2"},
    ]
    # The arguments travel as the model's JSON text, not re-encoded.
    assert json.loads(messages[2]["tool_calls"][0]["function"]["arguments"])["city"] == "Paris"


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_401_names_the_api_key_variable(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, stream: bool
) -> None:
    openai_server.enqueue(Reply.error(401, "Incorrect API key provided: k."))

    with pytest.raises(ProviderResponseError) as info:
        await provider.complete(user_request(), stream=stream)

    assert info.value.status == 401
    assert "MY_KEY_VAR" in str(info.value)
    assert "Incorrect API key provided" in str(info.value)
    assert not info.value.retryable


@pytest.mark.parametrize("stream", [True, False])
async def test_400_is_not_retryable_and_carries_the_server_message(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, stream: bool
) -> None:
    openai_server.enqueue(Reply.error(400, "Invalid value for 'temperature': 7 is too high."))

    with pytest.raises(ProviderResponseError) as info:
        await provider.complete(user_request(), stream=stream)

    assert info.value.status == 400
    assert not info.value.retryable
    assert "Invalid value for 'temperature': 7 is too high." in str(info.value)
    assert info.value.body == "Invalid value for 'temperature': 7 is too high."


@pytest.mark.parametrize("status", [429, 500, 502, 503])
@pytest.mark.parametrize("stream", [True, False])
async def test_rate_limits_and_server_errors_are_retryable(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, status: int, stream: bool
) -> None:
    openai_server.enqueue(Reply.error(status, f"trouble {status}", headers={"retry-after": "0"}))

    with pytest.raises(ProviderResponseError) as info:
        await provider.complete(user_request(), stream=stream)

    assert info.value.status == status
    assert info.value.retryable
    assert f"trouble {status}" in str(info.value)
    assert len(openai_server.requests) == 1  # the SDK's own retries are off


def closed_port_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("stream", [True, False])
async def test_connection_refused_is_a_retryable_connection_error_naming_the_url(
    stream: bool,
) -> None:
    url = closed_port_url()
    provider = OpenAIProvider(api_key="k", base_url=url)
    try:
        with pytest.raises(ProviderConnectionError) as info:
            await provider.complete(user_request(), stream=stream)
    finally:
        await provider.aclose()

    assert info.value.retryable
    assert info.value.url is not None
    assert info.value.url.rstrip("/") == url
    assert url in str(info.value)


@pytest.mark.parametrize("drop_after", [0, 1, 5])
async def test_dropped_stream_is_a_retryable_connection_error(
    openai_server: OpenAIWireServer, provider: OpenAIProvider, drop_after: int
) -> None:
    openai_server.enqueue(Reply.text(TEXT, chunk_size=3, drop_stream_after=drop_after))

    with pytest.raises(ProviderConnectionError) as info:
        await provider.complete(user_request(), stream=True, on_text=lambda _: None)

    assert info.value.retryable
    assert openai_server.base_url in str(info.value)


async def test_timeout_is_a_connection_error(openai_server: OpenAIWireServer) -> None:
    openai_server.enqueue(Reply.text("late", delay=2.0))
    provider = OpenAIProvider(api_key="k", base_url=openai_server.base_url, timeout=0.2)
    try:
        with pytest.raises(ProviderConnectionError) as info:
            await provider.complete(user_request())
    finally:
        await provider.aclose()

    assert info.value.retryable


async def test_every_failure_is_a_provider_error(
    openai_server: OpenAIWireServer, provider: OpenAIProvider
) -> None:
    """Callers catch one root: no SDK exception escapes the provider."""
    openai_server.enqueue(Reply.error(404, "The model 'gpt-nope' does not exist"))

    with pytest.raises(ProviderError) as info:
        await provider.complete(user_request())

    assert isinstance(info.value, ProviderResponseError)
    assert info.value.status == 404
    assert "gpt-nope" in str(info.value)
