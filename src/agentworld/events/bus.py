"""In-process publish/subscribe for one world (SPEC E1, O6).

``publish`` awaits every subscriber in subscription order, so a subscriber that
persists events and is subscribed first has stored an event before anything
else reacts to it (SPEC E2). A subscriber that raises is logged with the event
it failed on and reported as a ``system`` event; the other subscribers still
run. Nothing is fire-and-forget, so no error can vanish.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from operator import attrgetter

from agentworld import tracing
from agentworld.callbacks import maybe_await
from agentworld.models.events import EventKind, SystemEvent, WorldEvent

logger = logging.getLogger("agentworld.events")

Handler = Callable[[WorldEvent], "Awaitable[None] | None"]


class _Subscription:
    """One subscriber. A plain class, not a dataclass: defining a dataclass compiles its
    methods, which every process's first turn pays for each one on the runtime's import path
    (ARCHITECTURE.md, "Start-up"; benchmarks/README.md)."""

    __slots__ = ("handler", "kinds", "name", "order")

    def __init__(
        self, handler: Handler, kinds: frozenset[str] | None, name: str, order: int
    ) -> None:
        self.handler = handler
        self.kinds = kinds
        self.name = name
        self.order = order
        """When it subscribed: subscribers are awaited in this order, whichever list holds them."""


class EventBus:
    def __init__(self, world: str) -> None:
        self.world = world
        self._subscriptions: list[_Subscription] = []
        """Subscribers to every chat's events."""
        self._by_chat: dict[str, list[_Subscription]] = {}
        """Subscribers to one chat's events (and the world's own): a ``send`` watching its chat
        is not asked about the events of a thousand others."""
        self._order = itertools.count()

    def subscribe(
        self,
        handler: Handler,
        *,
        kinds: Iterable[EventKind] | None = None,
        name: str | None = None,
        chat: str | None = None,
    ) -> Callable[[], None]:
        """Register ``handler`` (sync or async); returns a function that unsubscribes it.
        ``chat``: only that chat's events, and those of no chat (the world's own)."""
        subscription = _Subscription(
            handler,
            frozenset(kinds) if kinds is not None else None,
            name or str(getattr(handler, "__qualname__", None) or repr(handler)),
            next(self._order),
        )
        members = self._subscriptions if chat is None else self._by_chat.setdefault(chat, [])
        members.append(subscription)

        def unsubscribe() -> None:
            if subscription in members:
                members.remove(subscription)
            if chat is not None and not members and self._by_chat.get(chat) is members:
                del self._by_chat[chat]

        return unsubscribe

    async def publish(self, event: WorldEvent) -> None:
        if tracing.enabled() and event.trace_id is None and (trace_id := tracing.trace_id()):
            event = event.model_copy(update={"trace_id": trace_id})
        for subscription in self._audience(event.chat):
            if subscription.kinds is not None and event.kind not in subscription.kinds:
                continue
            try:
                await maybe_await(subscription.handler(event))
            except Exception as exc:
                await self._report_failure(subscription, event, exc)

    def _audience(self, chat: str | None) -> Sequence[_Subscription]:
        """Who hears an event of ``chat``, in the order they subscribed (a copy: a handler
        may subscribe or unsubscribe while the event is delivered)."""
        if chat is None:  # the world's own event concerns the subscribers of every chat
            scoped = [s for members in self._by_chat.values() for s in members]
        else:
            scoped = self._by_chat.get(chat, [])
        if not scoped:
            return tuple(self._subscriptions)
        return sorted([*self._subscriptions, *scoped], key=_subscribed)

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


_subscribed = attrgetter("order")
