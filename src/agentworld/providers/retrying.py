"""Retries around any provider (SPEC L5), as a wrapper rather than per-SDK code.

Transient failures (connection errors, timeouts, 429, 5xx, and streams that end
before the provider's format says the answer is complete, which the providers
report as dropped connections) are retried with exponential backoff and full
jitter; anything else fails at once, because sending the same bad request again
cannot succeed.

With ``stream=True`` every attempt streams afresh through ``on_text``, so the text
a failed attempt already streamed is not part of the answer: the returned response
is always the last attempt's alone. A consumer that shows text as it arrives learns
of the abandoned attempt through :data:`retry_listener`.

The whole call, every attempt and every wait between them, is bounded by the request's
``deadline`` (an agent's ``model_deadline_seconds``): a model that accepts the connection and
never answers ends the call with :class:`ModelDeadlineError` then, whatever each attempt's
own read timeout, and the runtime reports it like any failed call (SPEC L5).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from contextvars import ContextVar

from agentworld.errors import ProviderError, ProviderResponseError
from agentworld.models import LLMResponse
from agentworld.providers.base import LLMProvider, LLMRequest, TextCallback
from agentworld.providers.errors import ModelDeadlineError

RetryListener = Callable[[int, ProviderError, float], Awaitable[None]]
retry_listener: ContextVar[RetryListener | None] = ContextVar("retry_listener", default=None)
"""Set by whoever streams a call to learn of each retry (attempt, error, delay) before it
happens: everything ``on_text`` got since the call began (or since the last retry) belongs to
the abandoned attempt and must be dropped. The runtime uses it to send ``sse`` ``error`` then a
fresh ``start`` for the same message id (``runtime/llm_call.py``)."""


class RetryingProvider:
    def __init__(
        self,
        wrapped: LLMProvider,
        *,
        attempts: int = 3,
        base_delay: float = 0.5,
        max_delay: float = 8.0,
    ) -> None:
        self.wrapped = wrapped
        self.name = wrapped.name
        self.attempts = max(1, attempts)
        self.base_delay = base_delay
        self.max_delay = max_delay

    async def complete(
        self, request: LLMRequest, *, stream: bool = False, on_text: TextCallback | None = None
    ) -> LLMResponse:
        deadline = asyncio.timeout(request.deadline)
        try:
            async with deadline:
                return await self._attempts(request, stream=stream, on_text=on_text)
        except TimeoutError as exc:
            if not deadline.expired():
                raise
            raise ModelDeadlineError(request.deadline) from exc

    async def _attempts(
        self, request: LLMRequest, *, stream: bool, on_text: TextCallback | None
    ) -> LLMResponse:
        for attempt in range(1, self.attempts + 1):
            try:
                return await self.wrapped.complete(request, stream=stream, on_text=on_text)
            except ProviderError as exc:
                if not exc.retryable or attempt == self.attempts:
                    raise
                delay = self._delay(attempt, exc)
                listener = retry_listener.get()
                if listener is not None:
                    await listener(attempt, exc, delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable: the loop returns or raises")

    def _delay(self, attempt: int, exc: ProviderError) -> float:
        """Full jitter on an exponential ceiling, but never sooner than the server asked."""
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        delay = random.uniform(0, ceiling)
        if isinstance(exc, ProviderResponseError) and exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        return delay

    async def aclose(self) -> None:
        await self.wrapped.aclose()
