"""Drive the loopback OpenAI wire server through the real ``openai`` SDK."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec
from agentworld.testing.processes import module_server, stop_process

MSGS: Any = [{"role": "user", "content": "hello there world"}]
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as srv:
        yield srv


@pytest.fixture
async def client(server: OpenAIWireServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as c:
        yield c


async def test_non_streaming_text(server: OpenAIWireServer, client: openai.AsyncOpenAI) -> None:
    server.enqueue(Reply.text("Hi from the wire", prompt_tokens=7, completion_tokens=4))
    resp = await client.chat.completions.create(model="gpt-test", messages=MSGS)
    assert resp.id.startswith("chatcmpl-")
    assert resp.object == "chat.completion"
    assert resp.model == "gpt-test"
    assert resp.choices[0].message.content == "Hi from the wire"
    assert resp.choices[0].message.tool_calls is None
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (7, 4)
    assert resp.usage.total_tokens == 11


async def test_default_echo_responder_and_derived_usage(client: openai.AsyncOpenAI) -> None:
    resp = await client.chat.completions.create(model="m", messages=MSGS)
    assert resp.choices[0].message.content == "echo: hello there world"
    assert resp.usage is not None
    assert resp.usage.prompt_tokens == 3  # word count of the messages


def test_custom_responder_sees_request_body() -> None:
    def responder(body: dict[str, Any]) -> Reply:
        return Reply.text(f"{body['model']}:{len(body['messages'])}")

    with (
        OpenAIWireServer(responder=responder) as srv,
        openai.OpenAI(base_url=srv.base_url, api_key="t", max_retries=0) as sync_client,
    ):
        resp = sync_client.chat.completions.create(model="mini", messages=MSGS)
    assert resp.choices[0].message.content == "mini:1"


async def test_streaming_text_with_usage(
    server: OpenAIWireServer, client: openai.AsyncOpenAI
) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    server.enqueue(Reply.text(text, chunk_size=5, prompt_tokens=3, completion_tokens=9))
    stream = await client.chat.completions.create(
        model="gpt-test", messages=MSGS, stream=True, stream_options={"include_usage": True}
    )
    parts: list[str] = []
    chunks = [chunk async for chunk in stream]
    for chunk in chunks:
        assert chunk.object == "chat.completion.chunk"
        assert chunk.model == "gpt-test"
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    assert "".join(parts) == text
    assert len(parts) == len(range(0, len(text), 5))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert len({c.id for c in chunks}) == 1
    assert chunks[-2].choices[0].finish_reason == "stop"
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None and last.usage.total_tokens == 12
    assert all(c.usage is None for c in chunks[:-1])


async def test_streaming_without_usage_has_no_usage_chunk(client: openai.AsyncOpenAI) -> None:
    stream = await client.chat.completions.create(model="m", messages=MSGS, stream=True)
    chunks = [chunk async for chunk in stream]
    assert all(c.choices for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_streaming_parallel_tool_calls_reassemble(
    server: OpenAIWireServer, client: openai.AsyncOpenAI
) -> None:
    args_a = json.dumps({"city": "Paris", "units": "metric"})
    args_b = json.dumps({"city": "Reykjavík", "days": [1, 2, 3]})
    server.enqueue(
        Reply.tools(
            ToolCallSpec("get_weather", args_a, id="call_abc"),
            ToolCallSpec("get_forecast", args_b),
            chunk_size=6,
        )
    )
    stream = await client.chat.completions.create(
        model="m", messages=MSGS, tools=TOOLS, stream=True
    )
    calls: dict[int, dict[str, str]] = {}
    fragments = {0: 0, 1: 0}
    finish = None
    async for chunk in stream:
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for tc in choice.delta.tool_calls or []:
            slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            if tc.id:
                slot["id"] = tc.id
                assert tc.type == "function"
            if tc.function and tc.function.name:
                slot["name"] += tc.function.name
            if tc.function and tc.function.arguments:
                slot["arguments"] += tc.function.arguments
                fragments[tc.index] += 1
    assert finish == "tool_calls"
    assert calls[0] == {"id": "call_abc", "name": "get_weather", "arguments": args_a}
    assert calls[1]["name"] == "get_forecast"
    assert calls[1]["id"].startswith("call_")
    assert json.loads(calls[1]["arguments"]) == {"city": "Reykjavík", "days": [1, 2, 3]}
    assert calls[1]["arguments"] == args_b
    assert fragments[0] > 1 and fragments[1] > 1  # arguments really were split


async def test_non_streaming_tool_calls(
    server: OpenAIWireServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(Reply.tools(ToolCallSpec("get_weather", '{"city": "Oslo"}'), content="checking"))
    resp = await client.chat.completions.create(model="m", messages=MSGS, tools=TOOLS)
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "checking"
    assert choice.message.tool_calls is not None
    (call,) = choice.message.tool_calls
    assert call.type == "function"
    assert call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Oslo"}


async def test_auto_tool_call_ids_are_unique(
    server: OpenAIWireServer, client: openai.AsyncOpenAI
) -> None:
    spec = ToolCallSpec("f", "{}")
    server.enqueue(Reply.tools(spec, spec), Reply.tools(spec))
    ids = []
    for _ in range(2):
        resp = await client.chat.completions.create(model="m", messages=MSGS)
        ids += [tc.id for tc in resp.choices[0].message.tool_calls or []]
    assert len(ids) == len(set(ids)) == 3


@pytest.mark.parametrize(
    ("status", "exc"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (404, openai.NotFoundError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
    ],
)
async def test_error_status_maps_to_typed_exception(
    server: OpenAIWireServer,
    client: openai.AsyncOpenAI,
    status: int,
    exc: type[openai.APIStatusError],
) -> None:
    server.enqueue(Reply.error(status, f"boom {status}", headers={"x-test": "yes"}))
    with pytest.raises(exc) as info:
        await client.chat.completions.create(model="m", messages=MSGS)
    assert info.value.status_code == status
    assert f"boom {status}" in info.value.message
    assert info.value.response.headers["x-test"] == "yes"
    assert isinstance(info.value.body, dict) and info.value.body["message"] == f"boom {status}"


async def test_error_on_streaming_request(
    server: OpenAIWireServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(Reply.error(429, "slow down"))
    with pytest.raises(openai.RateLimitError, match="slow down"):
        await client.chat.completions.create(model="m", messages=MSGS, stream=True)


async def test_sdk_retries_honour_retry_after(server: OpenAIWireServer) -> None:
    server.enqueue(Reply.error(429, "wait", headers={"retry-after-ms": "10"}), Reply.text("ok"))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=1) as c:
        resp = await c.chat.completions.create(model="m", messages=MSGS)
    assert resp.choices[0].message.content == "ok"
    assert len(server.requests) == 2


async def test_invalid_body_is_400(server: OpenAIWireServer, client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="messages"):
        await client.post("/chat/completions", body={"model": "m"}, cast_to=object)


async def test_requests_recorded_with_tools(
    server: OpenAIWireServer, client: openai.AsyncOpenAI
) -> None:
    await client.chat.completions.create(model="a", messages=MSGS, tools=TOOLS, temperature=0.5)
    await client.chat.completions.create(model="b", messages=MSGS, stream=True)
    reqs = server.requests
    assert [r["model"] for r in reqs] == ["a", "b"]
    assert reqs[0]["tools"] == TOOLS
    assert reqs[0]["temperature"] == 0.5
    assert reqs[0]["messages"] == MSGS
    assert reqs[1]["stream"] is True
    reqs.clear()  # a copy: the server's record is untouched
    assert len(server.requests) == 2
    server.enqueue(Reply.text("queued"))
    server.clear()
    assert server.requests == []
    resp = await client.chat.completions.create(model="c", messages=MSGS)
    assert resp.choices[0].message.content == "echo: hello there world"  # queue was cleared


async def test_dropped_stream_raises(server: OpenAIWireServer, client: openai.AsyncOpenAI) -> None:
    server.enqueue(Reply.text("x" * 100, chunk_size=2, drop_stream_after=5))
    stream = await client.chat.completions.create(model="m", messages=MSGS, stream=True)
    seen = 0
    with pytest.raises(openai.APIConnectionError):
        async for _ in stream:
            seen += 1
    assert seen == 5
    # the client recovers on a fresh connection
    resp = await client.chat.completions.create(model="m", messages=MSGS)
    assert resp.choices[0].message.content == "echo: hello there world"


async def test_stream_ended_early_closes_cleanly_without_finish_reason(
    server: OpenAIWireServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(Reply.text("x" * 100, chunk_size=2, drop_stream_after=5, drop_mode="end"))
    async with client.chat.completions.with_streaming_response.create(
        model="m", messages=MSGS, stream=True
    ) as raw:
        assert raw.headers["connection"] == "close"
        chunks = [chunk async for chunk in await raw.parse()]

    assert len(chunks) == 5  # no error: only the missing finish_reason tells
    assert all(choice.finish_reason is None for chunk in chunks for choice in chunk.choices)
    resp = await client.chat.completions.create(model="m", messages=MSGS)
    assert resp.choices[0].message.content == "echo: hello there world"


async def test_stream_ended_mid_event_drops_the_half_event_without_error(
    server: OpenAIWireServer, client: openai.AsyncOpenAI
) -> None:
    server.enqueue(
        Reply.text("x" * 100, chunk_size=2, drop_stream_after=5, drop_mode="end_mid_event")
    )
    stream = await client.chat.completions.create(model="m", messages=MSGS, stream=True)

    chunks = [chunk async for chunk in stream]

    assert len(chunks) == 5  # the SDK discards the half event it never saw end
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "x" * 8


async def test_delay_triggers_sdk_timeout(server: OpenAIWireServer) -> None:
    server.enqueue(Reply.text("late", delay=2.0))
    async with openai.AsyncOpenAI(
        base_url=server.base_url, api_key="t", max_retries=0, timeout=0.2
    ) as c:
        with pytest.raises(openai.APITimeoutError):
            await c.chat.completions.create(model="m", messages=MSGS)


async def test_keep_alive_sequential_calls(client: openai.AsyncOpenAI) -> None:
    start = time.perf_counter()
    for i in range(20):
        stream = i % 2 == 1
        if stream:
            s = await client.chat.completions.create(model="m", messages=MSGS, stream=True)
            text = "".join([c.choices[0].delta.content or "" async for c in s])
        else:
            r = await client.chat.completions.create(model="m", messages=MSGS)
            text = r.choices[0].message.content or ""
        assert text == "echo: hello there world"
    assert time.perf_counter() - start < 10


def test_sync_client_and_models_endpoint(server: OpenAIWireServer) -> None:
    with openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0) as c:
        assert [m.id for m in c.models.list()] == ["wire-test"]
        with c.chat.completions.create(model="m", messages=MSGS, stream=True) as stream:
            text = "".join(ch.choices[0].delta.content or "" for ch in stream)
    assert text == "echo: hello there world"


def test_runs_as_a_process() -> None:
    with module_server("agentworld.testing.openai_wire") as (base_url, proc):
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        with openai.OpenAI(base_url=base_url, api_key="t", max_retries=0) as c:
            resp = c.chat.completions.create(model="m", messages=MSGS)
        assert resp.choices[0].message.content == "echo: hello there world"
        assert stop_process(proc) == 0
