"""A model call is bounded as a whole by its request's deadline (an agent's
``modelDeadlineSeconds``), retries and waits included, on every provider: a server that accepts
the connection and never answers ends the call at the deadline, not after each attempt's read
timeout. Real sockets: a loopback server that accepts connections and never writes a byte."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentworld.errors import ProviderError
from agentworld.models import Agent
from agentworld.providers.anthropic import AnthropicProvider
from agentworld.providers.base import LLMProvider, LLMRequest, PromptMessage
from agentworld.providers.errors import ModelDeadlineError
from agentworld.providers.google import GoogleProvider
from agentworld.providers.openai import OpenAIProvider
from agentworld.providers.retrying import RetryingProvider
from agentworld.testing.silent import silent_server

READ_TIMEOUT = 30.0
"""Each attempt's own read timeout: far past the deadline, so only the deadline can end the call."""


@pytest.fixture
def silent_url() -> Iterator[str]:
    """``http://127.0.0.1:PORT``: accepts every connection, reads what is sent, answers nothing."""
    with silent_server() as port:
        yield f"http://127.0.0.1:{port}"


def provider_for(name: str, url: str) -> LLMProvider:
    match name:
        case "openai":
            return OpenAIProvider(api_key="k", base_url=url + "/v1", timeout=READ_TIMEOUT)
        case "anthropic":
            return AnthropicProvider(api_key="k", base_url=url, timeout=READ_TIMEOUT)
        case _:
            return GoogleProvider(api_key="k", base_url=url, timeout=READ_TIMEOUT)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("name", ["openai", "anthropic", "google"])
async def test_a_silent_model_ends_the_call_at_its_deadline(silent_url: str, name: str, stream: bool) -> None:
    provider = RetryingProvider(provider_for(name, silent_url), attempts=3, base_delay=0.01)
    request = LLMRequest(model="m", messages=[PromptMessage(role="user", content="hi")], deadline=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(ModelDeadlineError) as info:
            await provider.complete(request, stream=stream)
    finally:
        await provider.aclose()
    elapsed = time.monotonic() - started

    assert 0.5 <= elapsed < 3.0
    assert str(info.value) == "the model did not answer within 0.5 s (modelDeadlineSeconds)"
    assert isinstance(info.value, ProviderError) and not info.value.retryable


async def test_the_deadline_covers_the_waits_between_attempts() -> None:
    """Refused connections fail at once; the backoff between them (here 5 s) is what outlasts
    the deadline, and the call still ends on time."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed again: nothing listens there
    inner = OpenAIProvider(api_key="k", base_url=f"http://127.0.0.1:{port}/v1", timeout=READ_TIMEOUT)
    provider = RetryingProvider(inner, attempts=5, base_delay=5.0, max_delay=5.0)
    request = LLMRequest(model="m", messages=[PromptMessage(role="user", content="hi")], deadline=1)
    started = time.monotonic()
    try:
        with pytest.raises(ModelDeadlineError):
            await provider.complete(request)
    finally:
        await provider.aclose()
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize("value", [0, -1, 86_401])
def test_a_deadline_outside_a_second_to_a_day_is_refused(value: Any) -> None:
    with pytest.raises(ValueError, match="modelDeadlineSeconds"):
        Agent(world="w", name="a", provider="openai", model="m", modelDeadlineSeconds=value)


def test_an_agent_has_a_deadline_of_a_few_minutes_by_default() -> None:
    assert Agent(world="w", name="a", provider="openai", model="m").model_deadline_seconds == 300
