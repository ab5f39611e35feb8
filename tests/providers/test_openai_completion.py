"""A whole (non-streamed) chat completion read from its JSON (``providers.openai_completion``).

Over real HTTP: a loopback server answers each request with a body fixed by the test, the
official SDK carries it, and ``OpenAIProvider`` reads it. Well-formed bodies give what the
SDK's typed ``ChatCompletion`` gives (the path this reader replaced, kept here as the
reference); bodies in the wrong shape give one ``ProviderResponseError`` naming the endpoint,
never another exception.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from agentworld.errors import ProviderResponseError
from agentworld.models import LLMResponse, ToolCall, Usage
from agentworld.providers.base import LLMRequest, PromptMessage
from agentworld.providers.openai import OpenAIProvider


class FixedBodies:
    """A loopback server that answers every POST with ``body`` (bytes) as ``content_type``."""

    def __init__(self) -> None:
        self.body = b"{}"
        self.content_type = "application/json"
        fixed = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                self.send_response(200)
                self.send_header("content-type", fixed.content_type)
                self.send_header("content-length", str(len(fixed.body)))
                self.end_headers()
                self.wfile.write(fixed.body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FixedBodies:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def server() -> Iterator[FixedBodies]:
    with FixedBodies() as fixed:
        yield fixed


async def answer(server: FixedBodies, body: Any, *, content_type: str = "application/json") -> LLMResponse:
    server.body = body if isinstance(body, bytes) else json.dumps(body).encode()
    server.content_type = content_type
    provider = OpenAIProvider(api_key="k", base_url=server.base_url)
    try:
        request = LLMRequest(model="m", messages=[PromptMessage(role="user", content="hi")])
        return await provider.complete(request)
    finally:
        await provider.aclose()


def completion(message: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "served-model",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
        **fields,
    }  # fmt: skip


def typed_reading(body: dict[str, Any]) -> LLMResponse:
    """What the provider made of a body through the SDK's typed models, before this reader."""
    typed = ChatCompletion.model_validate(body)
    message = typed.choices[0].message
    calls = [
        ToolCall.of(c.id, c.function.name, c.function.arguments or "{}")
        for c in message.tool_calls or []
        if c.type == "function"
    ]
    usage = Usage(
        input_tokens=typed.usage.prompt_tokens if typed.usage else 0,
        output_tokens=typed.usage.completion_tokens if typed.usage else 0,
    )
    return LLMResponse.of(message.content or "", calls, usage=usage, model=typed.model)


def call(call_id: str, name: str, arguments: str | None, **extra: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}, **extra}


WELL_FORMED = {
    "text": completion({"content": "Done."}),
    "empty text": completion({"content": None}),
    "two calls beside text": completion(
        {"content": "Looking.", "tool_calls": [call("c1", "read_file", '{"path": "a"}'), call("c2", "now", "")]}
    ),
    "calls without text": completion({"content": None, "tool_calls": [call("c1", "read_file", '{"path": "ü"}')]}),
    "no usage": {k: v for k, v in completion({"content": "x"}).items() if k != "usage"},
}


@pytest.mark.parametrize("case", WELL_FORMED)
async def test_a_well_formed_completion_reads_as_the_sdks_typed_models_read_it(
    server: FixedBodies, case: str
) -> None:
    body = WELL_FORMED[case]
    assert await answer(server, body) == typed_reading(body)


async def test_what_is_read_from_a_completion(server: FixedBodies) -> None:
    body = completion({"content": "Looking.", "tool_calls": [call("c1", "read_file", None)]})
    response = await answer(server, body)
    assert response.type == "tool_calls"
    assert response.content == "Looking."
    assert response.tool_calls == [ToolCall.of("c1", "read_file", "{}")]
    assert response.usage == Usage(input_tokens=12, output_tokens=3)
    assert response.model == "served-model"


async def test_a_call_without_a_type_is_a_function_call_and_other_kinds_are_left_out(
    server: FixedBodies,
) -> None:
    untyped = {"id": "c1", "function": {"name": "now", "arguments": "{}"}}
    custom = {"id": "c2", "type": "custom", "custom": {"name": "grammar", "input": "x"}}
    response = await answer(server, completion({"content": None, "tool_calls": [untyped, custom]}))
    assert response.tool_calls == [ToolCall.of("c1", "now", "{}")]


MALFORMED: dict[str, tuple[Any, str]] = {
    "a JSON list": ([1, 2], "a body that is not a JSON object"),
    "no choices": (completion({"content": "x"}, choices=[]), "no choices"),
    "choices an object": (completion({"content": "x"}, choices={"0": {}}), "choices that are not a list"),
    "a choice without a message": (completion({"content": "x"}, choices=[{"index": 0}]), "without a message"),
    "content a number": (completion({"content": 7}), "content is not text"),
    "tool_calls an object": (completion({"content": None, "tool_calls": {"id": "c1"}}), "tool_calls that are not a list"),
    "a call that is a string": (completion({"tool_calls": ["read_file"]}), "a tool call that is not an object"),
    "a call without an id": (completion({"tool_calls": [{"type": "function", "function": {"name": "x"}}]}), "without an id"),
    "a name that is a number": (completion({"tool_calls": [call("c1", 5, "{}")]}), "name or arguments are not text"),  # type: ignore[arg-type]
    "arguments an object": (completion({"tool_calls": [call("c1", "x", {"a": 1})]}), "name or arguments are not text"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("case", MALFORMED)
async def test_a_body_in_the_wrong_shape_is_one_provider_error_naming_the_endpoint(
    server: FixedBodies, case: str
) -> None:
    body, said = MALFORMED[case]
    with pytest.raises(ProviderResponseError) as raised:
        await answer(server, body)
    assert said in str(raised.value)
    assert server.base_url in str(raised.value)
    assert "\n" not in str(raised.value)


async def test_a_body_that_is_not_json_is_a_provider_error(server: FixedBodies) -> None:
    with pytest.raises(ProviderResponseError, match="not a JSON object"):
        await answer(server, b"<html>gateway</html>", content_type="text/html")


async def test_usage_counts_that_are_not_numbers_count_as_none(server: FixedBodies) -> None:
    body = completion({"content": "x"}, usage={"prompt_tokens": "12", "completion_tokens": True})
    assert (await answer(server, body)).usage == Usage()


def stream_of(*events: str) -> bytes:
    return b"".join(f"data: {event}\n\n".encode() for event in (*events, "[DONE]"))


MALFORMED_CHUNKS = {
    "no choices": '{"id": "x", "model": "m"}',
    "a choice without a delta": '{"id": "x", "model": "m", "choices": [{"index": 0}]}',
    "a chunk that is a list": "[1, 2]",
    "content that is a number": '{"model": "m", "choices": [{"index": 0, "delta": {"content": 5}, "finish_reason": "stop"}]}',
    "a tool call without an index": '{"model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [{"id": "c"}]}}]}',
}


@pytest.mark.parametrize("case", MALFORMED_CHUNKS)
async def test_a_streamed_chunk_in_the_wrong_shape_is_one_provider_error_naming_the_endpoint(
    server: FixedBodies, case: str
) -> None:
    server.body = stream_of(MALFORMED_CHUNKS[case])
    server.content_type = "text/event-stream"
    provider = OpenAIProvider(api_key="k", base_url=server.base_url)
    try:
        with pytest.raises(ProviderResponseError) as raised:
            await provider.complete(LLMRequest(model="m", messages=[PromptMessage(role="user", content="hi")]), stream=True)
    finally:
        await provider.aclose()
    said = str(raised.value)
    assert "a stream chunk that is not a completion chunk" in said and server.base_url in said
    assert "\n" not in said
