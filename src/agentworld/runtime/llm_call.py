"""One model call with its streaming events (SPEC L3).

The provider stays pure; this step wraps it with ``sse`` events: ``start``
before the call, ``chunk`` per text fragment, ``end`` with the usage, or
``error`` when the call fails (the error is then raised to the loop). When the call is
retried after a failure, ``error`` then a fresh ``start`` tell consumers to drop the partial
text streamed so far.
"""

from __future__ import annotations

from agentworld.errors import ProviderError
from agentworld.events.bus import EventBus
from agentworld.models import LLMResponse
from agentworld.models.events import SSEEvent
from agentworld.providers.base import LLMProvider, LLMRequest
from agentworld.providers.retrying import retry_listener


async def call_model(
    provider: LLMProvider,
    request: LLMRequest,
    *,
    bus: EventBus,
    chat_id: str,
    agent: str,
    message_id: str,
    stream: bool,
) -> LLMResponse:
    if not stream:
        return await provider.complete(request)

    def sse(phase: str, **fields: object) -> SSEEvent:
        return SSEEvent.model_validate(
            {
                "world": bus.world,
                "phase": phase,
                "chat_id": chat_id,
                "agent": agent,
                "message_id": message_id,
                **fields,
            }
        )

    async def on_text(fragment: str) -> None:
        await bus.publish(sse("chunk", content=fragment))

    async def on_retry(attempt: int, exc: ProviderError, delay: float) -> None:
        # The partial text streamed so far is void: say so, then start the stream again.
        await bus.publish(sse("error", error=f"{exc} (retrying in {delay:.1f} s, attempt {attempt + 1})"))
        await bus.publish(sse("start"))

    await bus.publish(sse("start"))
    token = retry_listener.set(on_retry)
    try:
        response = await provider.complete(request, stream=True, on_text=on_text)
    except Exception as exc:
        await bus.publish(sse("error", error=str(exc)))
        raise
    finally:
        retry_listener.reset(token)
    await bus.publish(sse("end", content=response.content, usage=response.usage))
    return response
