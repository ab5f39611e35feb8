"""GoogleProvider through the official ``google-genai`` SDK against a loopback Gemini server.

Every test goes over real HTTP (SPEC L1, L2, L4, L5): the SDK frames the
request, the server answers in Gemini's JSON or SSE format, and the provider
maps what comes back.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from agentworld.errors import ProviderConnectionError, ProviderResponseError
from agentworld.models import LLMResponse, ToolCall, Usage
from agentworld.providers.base import LLMRequest, PromptMessage, ToolSpec
from agentworld.providers.google import GoogleProvider
from agentworld.providers.google_convert import SYNTHETIC_ID_PREFIX
from agentworld.providers.retrying import RetryingProvider
from agentworld.testing.gemini_wire import GeminiWireServer, Reply, ToolCallSpec

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CLOCK = ToolSpec(name="get_time", description="The current time.")
ARGS_A = {"city": "Paris", "units": "metric", "details": ["wind", "rain"]}
ARGS_B = {"timezone": "Europe/Berlin"}
SKIP = "skip_thought_signature_validator"


def user_request(text: str = "hello there", *, model: str = "gemini-test", **kw: Any) -> LLMRequest:
    messages = [
        PromptMessage(role="system", content="You are terse."),
        PromptMessage(role="user", content=text),
    ]
    return LLMRequest(model=model, messages=messages, **kw)


@pytest.fixture
def gemini() -> Iterator[GeminiWireServer]:
    with GeminiWireServer(api_key="k") as server:
        yield server


@pytest.fixture
async def provider(gemini: GeminiWireServer) -> AsyncIterator[GoogleProvider]:
    p = GoogleProvider(api_key="k", base_url=gemini.base_url, api_key_env="MY_GEMINI_KEY")
    try:
        yield p
    finally:
        await p.aclose()


async def complete(
    provider: GoogleProvider, request: LLMRequest, *, stream: bool
) -> tuple[LLMResponse, list[str]]:
    fragments: list[str] = []
    response = await provider.complete(request, stream=stream, on_text=fragments.append)
    return response, fragments


def schema_of(declaration: dict[str, Any]) -> Any:
    # This SDK version writes the field in snake case; the API accepts both spellings.
    return declaration.get("parametersJsonSchema", declaration.get("parameters_json_schema"))


# --- text --------------------------------------------------------------------------------------

TEXT = "The quick brown fox jumps over the lazy dog."


@pytest.mark.parametrize("stream", [True, False])
async def test_text_reply_with_usage_and_model(
    gemini: GeminiWireServer, provider: GoogleProvider, stream: bool
) -> None:
    gemini.enqueue(Reply.text(TEXT, chunk_size=5, prompt_tokens=17, completion_tokens=9))

    response, fragments = await complete(provider, user_request(), stream=stream)

    assert response == LLMResponse(
        type="text",
        content=TEXT,
        usage=Usage(input_tokens=17, output_tokens=9),
        model="gemini-test",
    )
    assert fragments == ([TEXT[i : i + 5] for i in range(0, len(TEXT), 5)] if stream else [])


async def test_streamed_and_plain_text_are_the_same_response(
    gemini: GeminiWireServer, provider: GoogleProvider
) -> None:
    gemini.enqueue(Reply.text(TEXT, chunk_size=3), Reply.text(TEXT))
    assert await provider.complete(user_request(), stream=True) == await provider.complete(
        user_request()
    )


async def test_async_text_callback_is_awaited(
    gemini: GeminiWireServer, provider: GoogleProvider
) -> None:
    gemini.enqueue(Reply.text("one two three", chunk_size=4))
    seen: list[str] = []

    async def on_text(fragment: str) -> None:
        seen.append(fragment)

    await provider.complete(user_request(), stream=True, on_text=on_text)
    assert "".join(seen) == "one two three" and len(seen) == 4


@pytest.mark.parametrize("stream", [True, False])
async def test_request_shape_system_instruction_config_path_and_key(
    gemini: GeminiWireServer, provider: GoogleProvider, stream: bool
) -> None:
    await provider.complete(user_request("hi there", temperature=0.3, max_tokens=64), stream=stream)

    (seen,) = gemini.received
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    assert seen.path == f"/v1beta/models/gemini-test:{method}"  # API version pinned
    assert seen.api_key == "k"
    assert seen.body == {
        "contents": [{"role": "user", "parts": [{"text": "hi there"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are terse."}]},
        "generationConfig": {"temperature": 0.3, "maxOutputTokens": 64},
    }


# --- tool calls --------------------------------------------------------------------------------


def two_calls(*, ids: tuple[str | None, str | None] = (None, None), **kw: Any) -> Reply:
    return Reply.tools(
        ToolCallSpec(name="get_weather", arguments=json.dumps(ARGS_A), id=ids[0]),
        ToolCallSpec(name="get_time", arguments=json.dumps(ARGS_B), id=ids[1]),
        **kw,
    )


@pytest.mark.parametrize("stream", [True, False])
async def test_one_tool_call_without_id_gets_a_synthesized_id(
    gemini: GeminiWireServer, provider: GoogleProvider, stream: bool
) -> None:
    gemini.enqueue(
        Reply.tools(ToolCallSpec("get_time", "{}"), prompt_tokens=5, completion_tokens=2)
    )

    response, fragments = await complete(provider, user_request(tools=[CLOCK]), stream=stream)

    assert response.type == "tool_calls"
    (call,) = response.tool_calls
    assert call.id.startswith(SYNTHETIC_ID_PREFIX)
    assert (call.function.name, call.function.arguments) == ("get_time", "{}")
    assert response.usage == Usage(input_tokens=5, output_tokens=2)
    assert response.content == "" and fragments == []


async def test_streamed_and_plain_tool_calls_are_the_same_response(
    gemini: GeminiWireServer, provider: GoogleProvider
) -> None:
    gemini.enqueue(two_calls(content="Checking.", chunk_size=3), two_calls(content="Checking."))
    request = user_request(tools=[WEATHER, CLOCK])

    streamed = await provider.complete(request, stream=True)
    plain = await provider.complete(request, stream=False)

    assert streamed == plain  # same synthesized ids too: they derive from the conversation
    assert streamed.content == "Checking."


@pytest.mark.parametrize("stream", [True, False])
async def test_parallel_calls_without_ids_get_distinct_ids_that_map_back_to_their_names(
    gemini: GeminiWireServer, provider: GoogleProvider, stream: bool
) -> None:
    gemini.enqueue(two_calls(), Reply.text("Sunny, and it is noon."))
    first = user_request("weather and time?", tools=[WEATHER, CLOCK])

    calls = (await provider.complete(first, stream=stream)).tool_calls

    assert [c.function.name for c in calls] == ["get_weather", "get_time"]
    assert [json.loads(c.function.arguments) for c in calls] == [ARGS_A, ARGS_B]
    assert len({c.id for c in calls}) == 2
    assert all(c.id.startswith(SYNTHETIC_ID_PREFIX) for c in calls)
    # Results come back in the other order: the names still follow the ids.
    follow_up = LLMRequest(
        model="gemini-test",
        tools=[WEATHER, CLOCK],
        messages=[
            *first.messages,
            PromptMessage(role="assistant", tool_calls=tuple(calls)),
            PromptMessage(role="tool", content="12:00:00", tool_call_id=calls[1].id),
            PromptMessage(role="tool", content='{"sky": "sunny"}', tool_call_id=calls[0].id),
        ],
    )
    answer = await provider.complete(follow_up, stream=stream)

    assert answer.content == "Sunny, and it is noon."
    contents = gemini.requests[-1]["contents"]
    # Made-up ids never reach Gemini, which matches results to calls by name and order.
    assert contents[1:] == [
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "get_weather", "args": ARGS_A}, "thoughtSignature": SKIP},
                {"functionCall": {"name": "get_time", "args": ARGS_B}},  # only the first is signed
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_time", "response": {"result": "12:00:00"}}},
                {"functionResponse": {"name": "get_weather", "response": {"sky": "sunny"}}},
            ],
        },
    ]


async def test_synthesized_ids_differ_between_turns_of_one_conversation(
    gemini: GeminiWireServer, provider: GoogleProvider
) -> None:
    gemini.enqueue(
        Reply.tools(ToolCallSpec("get_time", "{}")), Reply.tools(ToolCallSpec("get_time", "{}"))
    )
    first = user_request(tools=[CLOCK])
    (call_1,) = (await provider.complete(first)).tool_calls
    second = LLMRequest(
        model="gemini-test",
        tools=[CLOCK],
        messages=[
            *first.messages,
            PromptMessage(role="assistant", tool_calls=(call_1,)),
            PromptMessage(role="tool", content="12:00", tool_call_id=call_1.id),
        ],
    )
    (call_2,) = (await provider.complete(second)).tool_calls
    assert call_1.id != call_2.id


@pytest.mark.parametrize("stream", [True, False])
async def test_ids_sent_by_gemini_are_kept_and_sent_back_exactly(
    gemini: GeminiWireServer, provider: GoogleProvider, stream: bool
) -> None:
    gemini.enqueue(two_calls(ids=("fc_weather_1", "fc_time_2")), Reply.text("done"))
    first = user_request(tools=[WEATHER, CLOCK])

    calls = (await provider.complete(first, stream=stream)).tool_calls
    assert calls == [
        ToolCall.of("fc_weather_1", "get_weather", json.dumps(ARGS_A)),
        ToolCall.of("fc_time_2", "get_time", json.dumps(ARGS_B)),
    ]

    follow_up = LLMRequest(
        model="gemini-test",
        messages=[
            *first.messages,
            PromptMessage(role="assistant", tool_calls=tuple(calls)),
            PromptMessage(role="tool", content='{"sky": "sunny"}', tool_call_id="fc_weather_1"),
            PromptMessage(
                role="tool",
                content='{"error": "User denied approval for get_time"}',
                tool_call_id="fc_time_2",
            ),  # fmt: skip
        ],
    )
    await provider.complete(follow_up, stream=stream)

    model_turn, results = gemini.requests[-1]["contents"][1:]
    assert [p["functionCall"]["id"] for p in model_turn["parts"]] == ["fc_weather_1", "fc_time_2"]
    assert results["parts"] == [
        {
            "functionResponse": {
                "id": "fc_weather_1",
                "name": "get_weather",
                "response": {"sky": "sunny"},
            }
        },
        {
            "functionResponse": {
                "id": "fc_time_2",
                "name": "get_time",
                # An {"error": ...} object goes as is: Gemini reads that key as a failure.
                "response": {"error": "User denied approval for get_time"},
            }
        },
    ]


async def test_history_arrives_as_function_call_and_response_parts(
    gemini: GeminiWireServer, provider: GoogleProvider
) -> None:
    history = [
        PromptMessage(role="system", content="You are terse."),
        PromptMessage(role="user", content="What is the weather in Paris?"),
        PromptMessage(
            role="assistant",
            content="Let me look.",
            tool_calls=(ToolCall.of("call_abc", "get_weather", '{"city": "Paris"}'),),
        ),
        PromptMessage(role="tool", content="18 degrees", tool_call_id="call_abc"),
        PromptMessage(role="assistant", content="18 degrees in Paris."),
        PromptMessage(role="system", content="Answer in French."),
        PromptMessage(role="user", content="Thanks!"),
    ]

    await provider.complete(LLMRequest(model="gemini-3-flash", messages=history, tools=[WEATHER]))

    body = gemini.requests[-1]
    assert body["systemInstruction"]["parts"] == [{"text": "You are terse.\n\nAnswer in French."}]
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "What is the weather in Paris?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Let me look."},
                {
                    "functionCall": {
                        "id": "call_abc",
                        "name": "get_weather",
                        "args": {"city": "Paris"},
                    },
                    # Gemini 3 wants the first call's thought signature back; we send the
                    # documented placeholder because we keep none.
                    "thoughtSignature": SKIP,
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "call_abc",
                        "name": "get_weather",
                        "response": {"result": "18 degrees"},
                    }
                }
            ],
        },
        {"role": "model", "parts": [{"text": "18 degrees in Paris."}]},
        {"role": "user", "parts": [{"text": "Thanks!"}]},
    ]


async def test_tool_schemas_with_nested_objects_arrays_enums_and_optional_fields_arrive_intact(
    gemini: GeminiWireServer, provider: GoogleProvider
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Program to run"},
            "parameters": {"type": "array", "items": {"type": "string"}},
            "mode": {"type": "string", "enum": ["fast", "safe"]},
            "limits": {
                "type": "object",
                "properties": {
                    "timeout": {"type": "number", "minimum": 0},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                "required": ["timeout"],
            },
            "directory": {"type": ["string", "null"]},
            "targets": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"host": {"type": "string"}, "port": {"type": "integer"}},
                    "required": ["host"],
                },
            },
        },
        "required": ["command"],
    }
    shell = ToolSpec(name="shell_cmd", description="Run a command.", parameters=schema)

    await provider.complete(user_request(tools=[shell, CLOCK]))

    (tool,) = gemini.requests[-1]["tools"]
    declarations = tool["functionDeclarations"]
    assert [(d["name"], d["description"]) for d in declarations] == [
        ("shell_cmd", "Run a command."),
        ("get_time", "The current time."),
    ]
    assert schema_of(declarations[0]) == schema
    assert schema_of(declarations[1]) == {"type": "object", "properties": {}}


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_401_names_the_api_key_variable(
    gemini: GeminiWireServer, provider: GoogleProvider, stream: bool
) -> None:
    gemini.enqueue(Reply.error(401, "Request had invalid authentication credentials."))

    with pytest.raises(ProviderResponseError) as info:
        await provider.complete(user_request(), stream=stream)

    assert info.value.status == 401 and not info.value.retryable
    assert "$MY_GEMINI_KEY" in str(info.value)
    assert "invalid authentication credentials" in str(info.value)


@pytest.mark.parametrize("stream", [True, False])
async def test_a_rejected_key_is_a_400_that_still_names_the_variable(
    gemini: GeminiWireServer, stream: bool
) -> None:
    provider = GoogleProvider(
        api_key="wrong", base_url=gemini.base_url, api_key_env="MY_GEMINI_KEY"
    )
    try:
        with pytest.raises(ProviderResponseError) as info:
            await provider.complete(user_request(), stream=stream)
    finally:
        await provider.aclose()

    assert info.value.status == 400 and not info.value.retryable
    assert "API key not valid" in str(info.value) and "$MY_GEMINI_KEY" in str(info.value)


@pytest.mark.parametrize("stream", [True, False])
async def test_400_is_not_retryable_and_carries_the_server_message(
    gemini: GeminiWireServer, provider: GoogleProvider, stream: bool
) -> None:
    gemini.enqueue(Reply.error(400, "* GenerateContentRequest.generation_config.temperature: bad"))

    with pytest.raises(ProviderResponseError) as info:
        await provider.complete(user_request(), stream=stream)

    assert info.value.status == 400 and not info.value.retryable
    assert info.value.body == "* GenerateContentRequest.generation_config.temperature: bad"
    assert "MY_GEMINI_KEY" not in str(info.value)


@pytest.mark.parametrize("status", [429, 500, 503])
@pytest.mark.parametrize("stream", [True, False])
async def test_rate_limits_and_server_errors_are_retryable_and_not_retried_by_the_sdk(
    gemini: GeminiWireServer, provider: GoogleProvider, status: int, stream: bool
) -> None:
    gemini.enqueue(Reply.error(status, f"trouble {status}", headers={"retry-after": "3"}))

    with pytest.raises(ProviderResponseError) as info:
        await provider.complete(user_request(), stream=stream)

    assert info.value.status == status and info.value.retryable
    assert info.value.retry_after == 3.0
    assert f"trouble {status}" in str(info.value)
    assert len(gemini.requests) == 1  # the SDK's own retries are off


async def test_retrying_provider_recovers_from_a_transient_error(
    gemini: GeminiWireServer, provider: GoogleProvider
) -> None:
    gemini.enqueue(Reply.error(503, "overloaded"), Reply.text("finally"))
    retrying = RetryingProvider(provider, attempts=2, base_delay=0.01)

    response = await retrying.complete(user_request(), stream=True)

    assert response.content == "finally"
    assert len(gemini.requests) == 2


def closed_port_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@pytest.mark.parametrize("stream", [True, False])
async def test_connection_refused_is_a_retryable_connection_error_naming_the_url(
    stream: bool,
) -> None:
    url = closed_port_url()
    provider = GoogleProvider(api_key="k", base_url=url)
    try:
        with pytest.raises(ProviderConnectionError) as info:
            await provider.complete(user_request(), stream=stream)
    finally:
        await provider.aclose()

    assert info.value.retryable
    assert info.value.url == url
    assert url in str(info.value)


@pytest.mark.parametrize("drop_after", [0, 1, 5])
async def test_dropped_stream_is_a_retryable_connection_error(
    gemini: GeminiWireServer, provider: GoogleProvider, drop_after: int
) -> None:
    gemini.enqueue(Reply.text(TEXT, chunk_size=3, drop_stream_after=drop_after))

    with pytest.raises(ProviderConnectionError) as info:
        await provider.complete(user_request(), stream=True, on_text=lambda _: None)

    assert info.value.retryable
    assert gemini.base_url in str(info.value)
    assert (await provider.complete(user_request())).content == "echo: hello there"  # recovers


async def test_timeout_is_a_connection_error(gemini: GeminiWireServer) -> None:
    gemini.enqueue(Reply.text("late", delay=2.0))
    provider = GoogleProvider(api_key="k", base_url=gemini.base_url, timeout=0.2)
    try:
        with pytest.raises(ProviderConnectionError) as info:
            await provider.complete(user_request())
    finally:
        await provider.aclose()

    assert info.value.retryable


def test_importing_the_module_does_not_import_the_sdk() -> None:
    code = "import sys, agentworld.providers.google; print('google.genai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_vertex_environment_does_not_reroute_the_provider(
    gemini: GeminiWireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    provider = GoogleProvider(api_key="k", base_url=gemini.base_url)
    try:
        await provider.complete(user_request())
    finally:
        await provider.aclose()
    assert gemini.received[0].path == "/v1beta/models/gemini-test:generateContent"
