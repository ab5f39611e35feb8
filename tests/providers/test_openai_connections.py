"""Many requests at once through one OpenAIProvider.

A world's agents on one endpoint share one provider, so a thousand chats put a thousand
requests on it at once. The SDK client's pool is kept small and queues the rest: every request
is answered, none waits on a deadline for a connection, and the pool never grows past its limit.
Real HTTP against the child-process loopback server, which counts the connections used.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from agentworld.errors import ProviderConfigError
from agentworld.models import Agent
from agentworld.providers.base import LLMRequest, PromptMessage
from agentworld.providers.openai import DEFAULT_MAX_CONNECTIONS, OpenAIProvider
from agentworld.providers.registry import CONNECTIONS_ENV, build_provider
from agentworld.providers.retrying import RetryingProvider
from agentworld.testing.openai_wire_async import OpenAIWireProcess


def ask(text: str) -> LLMRequest:
    return LLMRequest(model="gpt-test", messages=[PromptMessage(role="user", content=text)])


async def test_200_concurrent_completions_all_succeed_on_a_bounded_pool() -> None:
    with OpenAIWireProcess() as server:
        provider = OpenAIProvider(api_key="k", base_url=server.base_url)
        try:
            replies = await asyncio.gather(
                *(provider.complete(ask(f"hello {i}"), stream=i % 2 == 1) for i in range(200))
            )
        finally:
            await provider.aclose()
        stats = server.stats()

    assert [r.content for r in replies] == [f"echo: hello {i}" for i in range(200)]
    assert (stats["requests"], stats["streamed"], stats["errors"]) == (200, 100, 0)
    assert 1 <= stats["connections"] <= DEFAULT_MAX_CONNECTIONS


async def test_a_slow_model_queues_requests_past_the_timeout_without_failing() -> None:
    """4 connections, 0.3 s an answer, 40 requests: the last waits about 2.7 s for a
    connection, well past the 1 s timeout, which bounds only the request on the wire."""
    with OpenAIWireProcess(delay=0.3) as server:
        provider = OpenAIProvider(
            api_key="k", base_url=server.base_url, max_connections=4, timeout=1.0
        )
        started = time.perf_counter()
        try:
            replies = await asyncio.gather(*(provider.complete(ask(f"q{i}")) for i in range(40)))
        finally:
            await provider.aclose()
        elapsed = time.perf_counter() - started
        stats = server.stats()

    assert [r.content for r in replies] == [f"echo: q{i}" for i in range(40)]
    assert stats["connections"] <= 4
    assert elapsed >= 40 / 4 * 0.3 * 0.9  # never more than 4 on the wire at once


async def test_a_cancelled_waiting_request_gives_its_place_back() -> None:
    with OpenAIWireProcess(delay=0.2) as server:
        provider = OpenAIProvider(api_key="k", base_url=server.base_url, max_connections=1)
        try:
            tasks = [asyncio.create_task(provider.complete(ask(f"q{i}"))) for i in range(4)]
            await asyncio.sleep(0.05)  # q0 on the wire, q1 next in the pool, q2 and q3 queued
            tasks[2].cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            after = await provider.complete(ask("after"))
        finally:
            await provider.aclose()
        stats = server.stats()

    assert isinstance(results[2], asyncio.CancelledError)
    assert [getattr(r, "content", None) for i, r in enumerate(results) if i != 2] == [
        "echo: q0",
        "echo: q1",
        "echo: q3",
    ]
    assert after.content == "echo: after"
    assert stats["requests"] == 4  # q2 never reached the server
    assert stats["connections"] == 1


def openai_provider(monkeypatch: pytest.MonkeyPatch, value: str | None) -> OpenAIProvider:
    if value is None:
        monkeypatch.delenv(CONNECTIONS_ENV, raising=False)
    else:
        monkeypatch.setenv(CONNECTIONS_ENV, value)
    agent = Agent(world="w", name="a", provider="openai", model="m", base_url="http://127.0.0.1:9/v1")
    provider = build_provider(agent)
    assert isinstance(provider, RetryingProvider)
    assert isinstance(provider.wrapped, OpenAIProvider)
    return provider.wrapped


async def test_the_connection_limit_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for value, expected in ((None, DEFAULT_MAX_CONNECTIONS), ("7", 7), (" 200 ", 200)):
        provider = openai_provider(monkeypatch, value)
        try:
            assert provider.max_connections == expected
        finally:
            await provider.aclose()


@pytest.mark.parametrize("value", ["0", "-3", "many", "2.5"])
def test_a_connection_limit_that_is_not_a_positive_whole_number_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    with pytest.raises(ProviderConfigError, match=CONNECTIONS_ENV):
        openai_provider(monkeypatch, value)
