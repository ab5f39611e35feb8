"""In-process publish/subscribe for one world (SPEC E1, O6).

``publish`` awaits every subscriber in subscription order, so a subscriber that
persists events and is subscribed first has stored an event before anything
else reacts to it (SPEC E2). A subscriber that raises is logged with the event
it failed on and reported as a ``system`` event; the other subscribers still
run. Nothing is fire-and-forget, so no error can vanish.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from agentworld.callbacks import maybe_await
from agentworld.models.events import EventKind, SystemEvent, WorldEvent

logger = logging.getLogger("agentworld.events")

Handler = Callable[[WorldEvent], "Awaitable[None] | None"]


@dataclass(frozen=True, eq=False)
class _Subscription:
    handler: Handler
    kinds: frozenset[str] | None
    name: str


class EventBus:
    def __init__(self, world: str) -> None:
        self.world = world
        self._subscriptions: list[_Subscription] = []

    def subscribe(
        self, handler: Handler, *, kinds: Iterable[EventKind] | None = None, name: str | None = None
    ) -> Callable[[], None]:
        """Register ``handler`` (sync or async); returns a function that unsubscribes it."""
        subscription = _Subscription(
            handler,
            frozenset(kinds) if kinds is not None else None,
            name or str(getattr(handler, "__qualname__", None) or repr(handler)),
        )
        self._subscriptions.append(subscription)

        def unsubscribe() -> None:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)

        return unsubscribe

    async def publish(self, event: WorldEvent) -> None:
        for subscription in tuple(self._subscriptions):
            if subscription.kinds is not None and event.kind not in subscription.kinds:
                continue
            try:
                await maybe_await(subscription.handler(event))
            except Exception as exc:
                await self._report_failure(subscription, event, exc)

    async def _report_failure(
        self, subscription: _Subscription, event: WorldEvent, exc: Exception
    ) -> None:
        logger.error(
            "event subscriber %s failed on %s event %s in world %s",
            subscription.name,
            event.kind,
            event.event_id,
            self.world,
            exc_info=exc,
        )
        if isinstance(event, SystemEvent) and event.reason == "subscriber_failed":
            return  # a failure while reporting a failure: the log above is all we can do
        await self.publish(
            SystemEvent(
                world=self.world,
                level="error",
                reason="subscriber_failed",
                text=f"event subscriber {subscription.name} failed: {exc}",
                chat_id=event.chat,
                context={
                    "source": "subscriber",
                    "subscriber": subscription.name,
                    "event_kind": event.kind,
                    "event_id": event.event_id,
                    "error_type": type(exc).__name__,
                },
            )
        )
