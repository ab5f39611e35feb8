"""One model call with its streaming events (SPEC L3).

The provider stays pure; this step wraps it with ``sse`` events: ``start``
before the call, ``chunk`` per text fragment, ``end`` with the usage, or
``error`` when the call fails (the error is then raised to the loop). When the call is
retried after a failure, ``error`` then a fresh ``start`` tell consumers to drop the partial
text streamed so far.

The ``end`` event is not published here: it is returned, and the loop stores it in the
transaction of the message the call produced, then publishes both (one write per step, and
the log has the end exactly when it has the answer).

An embedder's streaming callbacks (``runtime.streaming``) are called when there are some; that
module is imported by whoever made them, so a process without any does not load it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from agentworld.errors import ProviderError
from agentworld.events.bus import EventBus
from agentworld.models import LLMResponse, Usage
from agentworld.models.events import SSEEvent, SSEPhase
from agentworld.process_secrets import redact_process_text
from agentworld.providers.base import LLMProvider, LLMRequest
from agentworld.providers.retrying import retry_listener

if TYPE_CHECKING:
    from agentworld.runtime.streaming import StreamCallbacks


async def call_model(
    provider: LLMProvider,
    request: LLMRequest,
    *,
    bus: EventBus,
    chat_id: str,
    agent: str,
    message_id: str,
    stream: bool,
    callbacks: StreamCallbacks | None = None,
) -> ModelCall:
    if not stream:
        response = await provider.complete(request)
        await _report_tool_calls(
            callbacks, response, agent=agent, chat_id=chat_id, message_id=message_id
        )
        return ModelCall(response, None)
    streamed: list[str] = []

    def sse(
        phase: SSEPhase, *, content: str = "", usage: Usage | None = None, error: str | None = None
    ) -> SSEEvent:
        return SSEEvent(
            world=bus.world,
            phase=phase,
            chat_id=chat_id,
            agent=agent,
            message_id=message_id,
            content=content,
            usage=usage,
            error=error,
        )

    async def on_text(fragment: str) -> None:
        await bus.publish(sse("chunk", content=fragment))
        if callbacks is not None:
            from agentworld.runtime.streaming import StreamChunk, call_safely  # (module docstring)

            streamed.append(fragment)
            await call_safely(callbacks.on_token, StreamChunk(agent, chat_id, message_id, fragment))
            await call_safely(
                callbacks.on_content, StreamChunk(agent, chat_id, message_id, "".join(streamed))
            )

    async def on_retry(attempt: int, exc: ProviderError, delay: float) -> None:
        # The partial text streamed so far is void: say so, then start the stream again.
        await bus.publish(
            sse(
                "error",
                error=f"{redact_process_text(str(exc))} (retrying in {delay:.1f} s, attempt {attempt + 1})",
            )
        )
        await bus.publish(sse("start"))
        streamed.clear()

    await bus.publish(sse("start"))
    token = retry_listener.set(on_retry)
    try:
        response = await provider.complete(request, stream=True, on_text=on_text)
    except Exception as exc:
        await bus.publish(sse("error", error=redact_process_text(str(exc))))
        raise
    except asyncio.CancelledError:
        # Stopped (a person's stop, a lost lease): watchers drop the half-streamed answer.
        await asyncio.shield(bus.publish(sse("error", error="stopped")))
        raise
    finally:
        retry_listener.reset(token)
    await _report_tool_calls(
        callbacks, response, agent=agent, chat_id=chat_id, message_id=message_id
    )
    return ModelCall(response, sse("end", content=response.content, usage=response.usage))


class ModelCall:
    """What a model call gave: the response, and — when it streamed — its ``end`` event, which
    the caller stores with the message it makes of the response and publishes before it. (A
    plain class: see ``events.bus._Subscription``.)"""

    __slots__ = ("response", "end")

    def __init__(self, response: LLMResponse, end: SSEEvent | None) -> None:
        self.response = response
        self.end = end

    @property
    def ends(self) -> tuple[SSEEvent, ...]:
        """The ``end`` event, as the events a step stores with its message."""
        return (self.end,) if self.end is not None else ()


async def _report_tool_calls(
    callbacks: StreamCallbacks | None,
    response: LLMResponse,
    *,
    agent: str,
    chat_id: str,
    message_id: str,
) -> None:
    if callbacks is None or callbacks.on_tool_call is None:
        return
    from agentworld.runtime.streaming import StreamedToolCall, call_safely  # (module docstring)

    for call in response.tool_calls:
        await call_safely(
            callbacks.on_tool_call, StreamedToolCall(agent, chat_id, message_id, call)
        )
