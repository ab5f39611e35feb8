"""A stream that ends before its wire format says it is complete is a dropped stream (SPEC L5).

Every provider, on its official SDK against its loopback wire server, for the three ways a
stream can stop early (``DropMode``): the socket cut, the body ended cleanly between events
(no ``finish_reason`` / ``message_stop`` / ``finishReason``), or ended in the middle of one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TypeAlias, get_args

import pytest

from agentworld.errors import ProviderConnectionError, ProviderError
from agentworld.models import LLMResponse
from agentworld.providers.anthropic import AnthropicProvider
from agentworld.providers.base import LLMProvider, LLMRequest, PromptMessage
from agentworld.providers.google import GoogleProvider
from agentworld.providers.openai import OpenAIProvider
from agentworld.providers.retrying import RetryingProvider, retry_listener
from agentworld.testing.anthropic_wire import AnthropicWireServer
from agentworld.testing.gemini_wire import GeminiWireServer
from agentworld.testing.openai_wire import DropMode, OpenAIWireServer, Reply, ToolCallSpec

MODES: tuple[DropMode, ...] = get_args(DropMode)
CUT_OFF = "Hello world, how are you today?"
"""The answer of the attempt that is cut short; only a prefix of it ever streams."""
COMPLETE = "The complete answer, sent in full."
REQUEST = LLMRequest(model="wire-test", messages=[PromptMessage(role="user", content="hi")])

Server: TypeAlias = OpenAIWireServer | AnthropicWireServer | GeminiWireServer


@dataclass
class Wire:
    server: Server
    provider: LLMProvider

    def retrying(self, attempts: int) -> RetryingProvider:
        # Closing is the fixture's job: the wrapper would close the same client again.
        return RetryingProvider(self.provider, attempts=attempts, base_delay=0)


def serve(name: str) -> Wire:
    match name:
        case "openai":
            openai_server = OpenAIWireServer().start()
            return Wire(openai_server, OpenAIProvider(api_key="k", base_url=openai_server.base_url))
        case "anthropic":
            anthropic_server = AnthropicWireServer().start()
            provider = AnthropicProvider(api_key="k", base_url=anthropic_server.base_url)
            return Wire(anthropic_server, provider)
        case "google":
            gemini_server = GeminiWireServer().start()
            return Wire(gemini_server, GoogleProvider(api_key="k", base_url=gemini_server.base_url))
    raise AssertionError(name)


@pytest.fixture(params=["openai", "anthropic", "google"])
async def wire(request: pytest.FixtureRequest) -> AsyncIterator[Wire]:
    running = serve(request.param)
    try:
        yield running
    finally:
        await running.provider.aclose()
        running.server.stop()


def cut_off(mode: DropMode, **kw: object) -> Reply:
    """Five events of ``CUT_OFF`` (part of its text in every provider's layout), then stop."""
    return Reply.text(CUT_OFF, chunk_size=3, drop_stream_after=5, drop_mode=mode, **kw)


def answer(response: LLMResponse) -> tuple[object, ...]:
    return (response.type, response.content, response.tool_calls)


@pytest.mark.parametrize("mode", MODES)
async def test_no_prefix_of_a_stream_is_taken_for_the_answer(wire: Wire, mode: DropMode) -> None:
    """Stop the stream after each of its events in turn: every stop before the provider's
    "complete" marker is a retryable error, and no stop ever gives a partial answer (a text
    cut mid-word, a tool call without its arguments, an Anthropic block left open)."""
    whole = Reply.tools(
        ToolCallSpec(name="get_weather", arguments='{"city": "Paris"}', id="call_weather"),
        content=CUT_OFF,
        chunk_size=3,
    )
    wire.server.enqueue(whole)
    expected = answer(await wire.provider.complete(REQUEST, stream=True))

    completed: list[bool] = []
    for events in range(40):
        wire.server.enqueue(dataclasses.replace(whole, drop_stream_after=events, drop_mode=mode))
        try:
            response = await wire.provider.complete(REQUEST, stream=True)
        except ProviderConnectionError as exc:
            assert exc.retryable
            completed.append(False)
        else:
            # The answer; usage may still be missing (OpenAI's usage chunk follows the finish).
            assert answer(response) == expected
            completed.append(True)

    assert not completed[0] and completed[-1]  # the range covers the whole stream
    assert completed == sorted(completed)  # once complete, every longer stream is too


@pytest.mark.parametrize("mode", MODES)
async def test_a_stream_cut_short_is_retried_and_only_the_complete_answer_is_kept(
    wire: Wire, mode: DropMode
) -> None:
    wire.server.enqueue(cut_off(mode), Reply.text(COMPLETE, chunk_size=3))
    streamed: list[list[str]] = [[]]  # the text of each attempt, as a consumer would show it

    async def on_retry(attempt: int, exc: ProviderError, delay: float) -> None:
        assert isinstance(exc, ProviderConnectionError)
        streamed.append([])  # the attempt so far is abandoned

    token = retry_listener.set(on_retry)
    try:
        response = await wire.retrying(attempts=3).complete(
            REQUEST, stream=True, on_text=lambda text: streamed[-1].append(text)
        )
    finally:
        retry_listener.reset(token)

    abandoned, final = ("".join(texts) for texts in streamed)
    assert CUT_OFF.startswith(abandoned) and 0 < len(abandoned) < len(CUT_OFF)
    assert answer(response) == ("text", COMPLETE, [])
    assert final == COMPLETE
    assert len(wire.server.requests) == 2


@pytest.mark.parametrize("mode", MODES)
async def test_a_stream_cut_short_on_every_attempt_fails_after_the_attempts(
    wire: Wire, mode: DropMode
) -> None:
    wire.server.enqueue(*[cut_off(mode) for _ in range(3)], Reply.text("never reached"))
    retries: list[int] = []

    async def on_retry(attempt: int, exc: ProviderError, delay: float) -> None:
        retries.append(attempt)

    token = retry_listener.set(on_retry)
    try:
        with pytest.raises(ProviderConnectionError) as info:
            await wire.retrying(attempts=3).complete(REQUEST, stream=True, on_text=lambda _: None)
    finally:
        retry_listener.reset(token)

    assert info.value.retryable
    assert len(wire.server.requests) == 3
    assert retries == [1, 2]


async def test_a_non_streamed_answer_ignores_the_stream_script(wire: Wire) -> None:
    wire.server.enqueue(cut_off("end"))

    response = await wire.provider.complete(REQUEST)

    assert answer(response) == ("text", CUT_OFF, [])
