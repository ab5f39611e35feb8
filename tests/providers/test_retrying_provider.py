"""RetryingProvider around the real OpenAI provider and a loopback server (SPEC L5)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest

from agentworld.errors import ProviderConnectionError, ProviderResponseError
from agentworld.models import Usage
from agentworld.providers.base import LLMRequest, PromptMessage
from agentworld.providers.openai import OpenAIProvider
from agentworld.providers.retrying import RetryingProvider
from agentworld.testing.openai_wire import OpenAIWireServer, Reply

REQUEST = LLMRequest(model="gpt-test", messages=[PromptMessage(role="user", content="hi")])


@pytest.fixture
async def retrying(openai_server: OpenAIWireServer) -> AsyncIterator[RetryingProvider]:
    provider = RetryingProvider(
        OpenAIProvider(api_key="k", base_url=openai_server.base_url), attempts=3, base_delay=0.01
    )
    try:
        yield provider
    finally:
        await provider.aclose()


@pytest.mark.parametrize("stream", [True, False])
async def test_server_error_then_success_succeeds_on_second_request(
    openai_server: OpenAIWireServer, retrying: RetryingProvider, stream: bool
) -> None:
    openai_server.enqueue(
        Reply.error(500, "boom"), Reply.text("recovered", prompt_tokens=2, completion_tokens=1)
    )

    response = await retrying.complete(REQUEST, stream=stream)

    assert response.content == "recovered"
    assert response.usage == Usage(input_tokens=2, output_tokens=1)
    assert len(openai_server.requests) == 2


@pytest.mark.parametrize("stream", [True, False])
async def test_persistent_rate_limit_raises_after_exactly_the_attempts(
    openai_server: OpenAIWireServer, retrying: RetryingProvider, stream: bool
) -> None:
    openai_server.enqueue(*[Reply.error(429, "slow down") for _ in range(3)], Reply.text("late"))

    with pytest.raises(ProviderResponseError) as info:
        await retrying.complete(REQUEST, stream=stream)

    assert info.value.status == 429
    assert "slow down" in str(info.value)
    assert len(openai_server.requests) == 3


@pytest.mark.parametrize("stream", [True, False])
async def test_bad_request_is_not_retried(
    openai_server: OpenAIWireServer, retrying: RetryingProvider, stream: bool
) -> None:
    openai_server.enqueue(Reply.error(400, "bad schema"), Reply.text("should not be reached"))

    with pytest.raises(ProviderResponseError) as info:
        await retrying.complete(REQUEST, stream=stream)

    assert info.value.status == 400
    assert len(openai_server.requests) == 1


async def test_dropped_stream_then_success_succeeds(
    openai_server: OpenAIWireServer, retrying: RetryingProvider
) -> None:
    openai_server.enqueue(
        Reply.text("first attempt is cut off", chunk_size=4, drop_stream_after=3),
        Reply.text("second attempt arrives"),
    )
    fragments: list[str] = []

    response = await retrying.complete(REQUEST, stream=True, on_text=fragments.append)

    assert response.content == "second attempt arrives"
    assert len(openai_server.requests) == 2
    # The cut attempt already streamed some text; the final answer is complete at the end.
    assert "".join(fragments).endswith("second attempt arrives")


async def test_connection_refused_is_retried_then_raised() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    retrying = RetryingProvider(OpenAIProvider(api_key="k", base_url=url), attempts=2, base_delay=0)
    try:
        with pytest.raises(ProviderConnectionError) as info:
            await retrying.complete(REQUEST)
    finally:
        await retrying.aclose()

    assert url in str(info.value)


async def test_wrapper_exposes_wrapped_provider_and_name(
    openai_server: OpenAIWireServer, retrying: RetryingProvider
) -> None:
    assert isinstance(retrying.wrapped, OpenAIProvider)
    assert retrying.name == "openai"
    assert retrying.attempts == 3


async def test_attempts_below_one_still_make_one_request(openai_server: OpenAIWireServer) -> None:
    provider = RetryingProvider(
        OpenAIProvider(api_key="k", base_url=openai_server.base_url), attempts=0, base_delay=0
    )
    openai_server.enqueue(Reply.error(503, "down"), Reply.text("unused"))
    try:
        with pytest.raises(ProviderResponseError):
            await provider.complete(REQUEST)
    finally:
        await provider.aclose()

    assert len(openai_server.requests) == 1
