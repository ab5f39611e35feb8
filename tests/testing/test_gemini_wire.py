"""Drive the loopback Gemini wire server through the real ``google-genai`` SDK."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import httpx
import httpx2
import pytest
from google import genai
from google.genai import errors, types

from agentworld.testing.gemini_wire import GeminiWireServer, Reply, ToolCallSpec
from agentworld.testing.processes import module_server, stop_process

WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Weather for a city",
            parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}},
        )
    ]
)
NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)
CONFIG = types.GenerateContentConfig(tools=[WEATHER], automatic_function_calling=NO_AFC)


def make_client(base_url: str, *, api_key: str = "test-key", **options: Any) -> genai.Client:
    http_options = types.HttpOptions(
        base_url=base_url, retry_options=types.HttpRetryOptions(attempts=1), **options
    )
    return genai.Client(api_key=api_key, vertexai=False, http_options=http_options)


@pytest.fixture
def server() -> Iterator[GeminiWireServer]:
    with GeminiWireServer() as srv:
        yield srv


@pytest.fixture
async def client(server: GeminiWireServer) -> AsyncIterator[genai.Client]:
    c = make_client(server.base_url)
    try:
        yield c
    finally:
        await c.aio.aclose()
        c.close()


async def generate(client: genai.Client, text: str = "hello there world", **kw: Any) -> Any:
    return await client.aio.models.generate_content(model="gemini-test", contents=text, **kw)


async def stream(client: genai.Client, text: str = "hello there world", **kw: Any) -> list[Any]:
    chunks = await client.aio.models.generate_content_stream(
        model="gemini-test", contents=text, **kw
    )
    return [chunk async for chunk in chunks]


async def test_text_reply_path_key_and_usage(
    server: GeminiWireServer, client: genai.Client
) -> None:
    server.enqueue(Reply.text("Hi from the wire", prompt_tokens=7, completion_tokens=4))

    resp = await generate(client)

    assert resp.text == "Hi from the wire"
    assert resp.function_calls is None
    assert resp.model_version == "gemini-test"
    assert resp.candidates[0].finish_reason == types.FinishReason.STOP
    usage = resp.usage_metadata
    assert (usage.prompt_token_count, usage.candidates_token_count) == (7, 4)
    assert usage.total_token_count == 11
    (seen,) = server.received
    # This SDK defaults to API version v1 and puts the model into the path.
    assert seen.path == "/v1/models/gemini-test:generateContent"
    assert (seen.method, seen.version, seen.model) == ("generateContent", "v1", "gemini-test")
    assert seen.api_key == "test-key"  # sent as the x-goog-api-key header
    assert server.requests == [
        {"contents": [{"parts": [{"text": "hello there world"}], "role": "user"}]}
    ]


async def test_api_version_option_changes_the_path(server: GeminiWireServer) -> None:
    c = make_client(server.base_url, api_version="v1beta")
    try:
        await c.aio.models.generate_content(model="models/gemini-x", contents="hi")
    finally:
        await c.aio.aclose()
        c.close()
    assert server.received[0].path == "/v1beta/models/gemini-x:generateContent"


async def test_default_echo_responder_and_derived_usage(client: genai.Client) -> None:
    resp = await generate(client, config=types.GenerateContentConfig(system_instruction="be brief"))
    assert resp.text == "echo: hello there world"
    assert resp.usage_metadata.prompt_token_count == 5  # words of contents + system instruction


def test_sync_client_and_custom_responder() -> None:
    def responder(body: dict[str, Any]) -> Reply:
        return Reply.text(f"contents:{len(body['contents'])}")

    with GeminiWireServer(responder=responder) as srv:
        c = make_client(srv.base_url)
        try:
            resp = c.models.generate_content(model="m", contents="x")
            text = "".join(
                ch.text or "" for ch in c.models.generate_content_stream(model="m", contents="y")
            )
        finally:
            c.close()
    assert resp.text == "contents:1"
    assert text == "contents:1"


async def test_streamed_text_arrives_in_chunks_with_final_usage(
    server: GeminiWireServer, client: genai.Client
) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    server.enqueue(Reply.text(text, chunk_size=5, prompt_tokens=3, completion_tokens=9))

    chunks = await stream(client)

    assert "".join(c.text for c in chunks) == text
    assert len(chunks) == len(range(0, len(text), 5))
    assert server.received[0].path == "/v1/models/gemini-test:streamGenerateContent?alt=sse"
    assert all(c.usage_metadata.prompt_token_count == 3 for c in chunks)
    assert all(c.usage_metadata.candidates_token_count is None for c in chunks[:-1])
    assert chunks[-1].usage_metadata.candidates_token_count == 9
    assert chunks[-1].usage_metadata.total_token_count == 12
    assert [c.candidates[0].finish_reason for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert len({c.response_id for c in chunks}) == 1


@pytest.mark.parametrize("streamed", [False, True])
async def test_one_function_call_without_id(
    server: GeminiWireServer, client: genai.Client, streamed: bool
) -> None:
    server.enqueue(Reply.tools(ToolCallSpec("get_weather", '{"city": "Oslo"}')))

    if streamed:
        (chunk,) = await stream(client, config=CONFIG)
        calls = chunk.function_calls
    else:
        calls = (await generate(client, config=CONFIG)).function_calls

    assert calls == [types.FunctionCall(name="get_weather", args={"city": "Oslo"})]
    assert calls[0].id is None  # Gemini usually sends no id, and neither does the server


@pytest.mark.parametrize("streamed", [False, True])
async def test_two_parallel_function_calls_keep_order_ids_and_text(
    server: GeminiWireServer, client: genai.Client, streamed: bool
) -> None:
    args_b = json.dumps({"city": "Reykjavík", "days": [1, 2, 3], "opts": {"units": "metric"}})
    server.enqueue(
        Reply.tools(
            ToolCallSpec("get_weather", '{"city": "Paris"}', id="fc-1"),
            ToolCallSpec("get_forecast", args_b),
            content="Checking both.",
            chunk_size=4,
        )
    )

    if streamed:
        chunks = await stream(client, config=CONFIG)
        parts = [p for c in chunks for p in c.candidates[0].content.parts]
        # A function call arrives whole, in a chunk of its own, after the text chunks.
        assert [len(c.candidates[0].content.parts) for c in chunks] == [1] * len(chunks)
        assert chunks[-1].candidates[0].content.parts[0].function_call.name == "get_forecast"
    else:
        parts = (await generate(client, config=CONFIG)).candidates[0].content.parts
        assert parts[0].text == "Checking both."

    assert "".join(p.text or "" for p in parts) == "Checking both."
    calls = [p.function_call for p in parts if p.function_call]
    assert [(c.id, c.name) for c in calls] == [("fc-1", "get_weather"), (None, "get_forecast")]
    assert calls[0].args == {"city": "Paris"}
    assert calls[1].args == json.loads(args_b)


@pytest.mark.parametrize(
    ("status", "grpc", "exc"),
    [
        (400, "INVALID_ARGUMENT", errors.ClientError),
        (401, "UNAUTHENTICATED", errors.ClientError),
        (403, "PERMISSION_DENIED", errors.ClientError),
        (429, "RESOURCE_EXHAUSTED", errors.ClientError),
        (500, "INTERNAL", errors.ServerError),
        (503, "UNAVAILABLE", errors.ServerError),
    ],
)
@pytest.mark.parametrize("streamed", [False, True])
async def test_error_status_surfaces_as_the_sdk_error(
    server: GeminiWireServer,
    client: genai.Client,
    status: int,
    grpc: str,
    exc: type[errors.APIError],
    streamed: bool,
) -> None:
    server.enqueue(Reply.error(status, f"boom {status}", headers={"retry-after": "7"}))

    with pytest.raises(exc) as info:
        await (stream(client) if streamed else generate(client))

    assert info.value.code == status
    assert info.value.status == grpc
    assert info.value.message == f"boom {status}"
    assert info.value.details == {
        "error": {"code": status, "message": f"boom {status}", "status": grpc}
    }
    assert info.value.response.headers["retry-after"] == "7"


async def test_wrong_api_key_is_a_400_like_gemini(client: genai.Client) -> None:
    with GeminiWireServer(api_key="right") as srv:
        c = make_client(srv.base_url, api_key="wrong")
        try:
            with pytest.raises(errors.ClientError) as info:
                await c.aio.models.generate_content(model="m", contents="hi")
        finally:
            await c.aio.aclose()
            c.close()
    assert (info.value.code, info.value.status) == (400, "INVALID_ARGUMENT")
    assert "API key not valid" in str(info.value.message)
    assert info.value.details["error"]["details"][0]["reason"] == "API_KEY_INVALID"


async def test_dropped_stream_raises_a_transport_error(
    server: GeminiWireServer, client: genai.Client
) -> None:
    server.enqueue(Reply.text("x" * 100, chunk_size=2, drop_stream_after=5))
    chunks = await client.aio.models.generate_content_stream(model="m", contents="hi")
    seen = 0
    # The SDK wraps no transport error; it sends over aiohttp when installed (as here, for the
    # OpenAI SDK's aiohttp transport), else httpx2 or httpx.
    with pytest.raises((aiohttp.ClientPayloadError, httpx2.RemoteProtocolError, httpx.RemoteProtocolError)):
        async for _ in chunks:
            seen += 1
    assert seen == 5
    # the client recovers on a fresh connection
    assert (await generate(client)).text == "echo: hello there world"


async def test_stream_ended_early_closes_cleanly_without_finish_reason(
    server: GeminiWireServer, client: genai.Client
) -> None:
    server.enqueue(Reply.text("x" * 100, chunk_size=2, drop_stream_after=5, drop_mode="end"))

    chunks = await stream(client)  # no error: only the missing finishReason tells

    assert len(chunks) == 5
    assert all(c.candidates[0].finish_reason is None for c in chunks)
    assert (await generate(client)).text == "echo: hello there world"


async def test_stream_ended_mid_event_leaves_the_sdk_a_half_event_it_cannot_parse(
    server: GeminiWireServer, client: genai.Client
) -> None:
    server.enqueue(
        Reply.text("x" * 100, chunk_size=2, drop_stream_after=5, drop_mode="end_mid_event")
    )
    chunks = await client.aio.models.generate_content_stream(model="gemini-test", contents="hi")
    seen = 0

    with pytest.raises(errors.UnknownApiResponseError):
        async for _ in chunks:
            seen += 1

    assert seen == 5
    assert (await generate(client)).text == "echo: hello there world"


async def test_delay_triggers_the_sdk_timeout(server: GeminiWireServer) -> None:
    server.enqueue(Reply.text("late", delay=2.0))
    c = make_client(server.base_url, timeout=200)  # milliseconds
    try:
        with pytest.raises((TimeoutError, httpx2.TimeoutException, httpx.TimeoutException)):
            await c.aio.models.generate_content(model="m", contents="hi")
    finally:
        await c.aio.aclose()
        c.close()


async def test_requests_are_recorded_and_clear_empties_queue_and_record(
    server: GeminiWireServer, client: genai.Client
) -> None:
    config = types.GenerateContentConfig(
        system_instruction="sys",
        temperature=0.5,
        tools=[WEATHER],
        automatic_function_calling=NO_AFC,
    )
    await generate(client, config=config)
    body = server.requests[0]
    assert body["systemInstruction"] == {"parts": [{"text": "sys"}], "role": "user"}
    assert body["generationConfig"] == {"temperature": 0.5}
    (declaration,) = body["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "get_weather"
    schema = declaration.get("parametersJsonSchema", declaration.get("parameters_json_schema"))
    assert schema == {"type": "object", "properties": {"city": {"type": "string"}}}

    server.requests.clear()  # a copy: the server's record is untouched
    assert len(server.requests) == 1
    server.enqueue(Reply.text("queued"))
    server.clear()
    assert server.requests == [] and server.received == []
    assert (await generate(client)).text == "echo: hello there world"


def test_bad_requests_get_gemini_errors(server: GeminiWireServer) -> None:
    with httpx.Client(base_url=server.base_url) as http:
        missing = http.post("/v1beta/models/m:generateContent", json={"prompt": "x"})
        unknown = http.post("/v1beta/models/m:countTokens", json={"contents": []})
        nowhere = http.post("/v1/chat/completions", json={})
        listed = http.get("/v1beta/models")
    assert missing.status_code == 400
    assert missing.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert unknown.status_code == nowhere.status_code == 404
    assert listed.json()["models"][0]["name"] == "models/wire-test"


async def test_a_failing_responder_is_a_500(client: genai.Client) -> None:
    def broken(body: dict[str, Any]) -> Reply:
        return Reply.tools(ToolCallSpec("f", "[1, 2]"))  # Gemini args must be an object

    with GeminiWireServer(responder=broken) as srv:
        c = make_client(srv.base_url)
        try:
            with pytest.raises(errors.ServerError, match="JSON object"):
                await c.aio.models.generate_content(model="m", contents="hi")
        finally:
            await c.aio.aclose()
            c.close()


async def test_keep_alive_sequential_calls(client: genai.Client) -> None:
    start = time.perf_counter()
    for i in range(20):
        if i % 2:
            text = "".join(c.text or "" for c in await stream(client))
        else:
            text = (await generate(client)).text or ""
        assert text == "echo: hello there world"
    assert time.perf_counter() - start < 10


def test_runs_as_a_process() -> None:
    with module_server("agentworld.testing.gemini_wire") as (base_url, proc):
        assert base_url.startswith("http://127.0.0.1:")
        c = make_client(base_url)
        try:
            assert c.models.generate_content(model="m", contents="hi").text == "echo: hi"
        finally:
            c.close()
        assert stop_process(proc) == 0
