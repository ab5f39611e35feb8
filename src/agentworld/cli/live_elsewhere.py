"""What other processes do in a world, shown on a terminal as it happens (``send``, ``talk``).

The process at the terminal shows what its own bus carries. The work may be done elsewhere:
on Temporal (SPEC S1) always by a worker, and without it by whichever process holds the chat
(another ``send``, a server). On PostgreSQL the terminal follows the world as the HTTP event
stream does — one ``events.feed.WorldFeed`` over the event log, woken by the log's
notifications, with the token chunks other processes relay on the world's live channel
(``events/log_listener.py``) — and hands each event to the view as if it had come by on the
bus. An event this process published comes both ways: ``OnceEach`` shows it once. On SQLite
there is nothing to follow: ``follow_elsewhere`` returns None.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentworld.models.events import WorldEvent
    from agentworld.runtime.world import WorldRuntime

logger = logging.getLogger("agentworld.cli")

POLL_SECONDS = 0.25
"""How often the log is read while the listening connection is down."""
CATCH_UP_SECONDS = 1.0
"""How long closing waits for the events stored up to then to be shown."""

REMEMBERED = 10_000
"""Event ids ``OnceEach`` keeps (the newest): an event comes the other way within moments."""

Close = Callable[[], Awaitable[None]]


class OnceEach:
    """Hands each event to ``on_event`` once, whether it came by on the bus, from the log, or
    both (a transcript message is known by its message id: the view passes over those shown)."""

    def __init__(
        self,
        on_event: Callable[[WorldEvent], None],
        on_elsewhere: Callable[[WorldEvent], None] | None = None,
    ) -> None:
        self._on_event = on_event
        self._on_elsewhere = on_elsewhere or on_event
        self._seen: OrderedDict[str, None] = OrderedDict()

    def __call__(self, event: WorldEvent) -> None:
        """An event from this process's bus."""
        if self._first(event):
            self._on_event(event)

    def elsewhere(self, event: WorldEvent) -> None:
        """An event read from the log (another process's, unless this one's came by first)."""
        if self._first(event):
            self._on_elsewhere(event)

    def _first(self, event: WorldEvent) -> bool:
        if event.event_id in self._seen:
            return False
        self._seen[event.event_id] = None
        if len(self._seen) > REMEMBERED:
            self._seen.popitem(last=False)
        return True


async def follow_elsewhere(
    runtime: WorldRuntime,
    on_event: Callable[[WorldEvent], None],
    on_change: Callable[[WorldEvent], Awaitable[None]] | None = None,
) -> Close | None:
    """Hand ``on_event`` every event of the world stored from now on, and the chunks other
    processes relay, in order; returns the function that stops (after showing what was
    stored until then), or None when there is nothing to follow. ``crud`` events (what was
    changed: messages removed, a chat branched) go to ``on_change``, awaited before the events
    after them are handed on, or nowhere."""
    url = runtime.storage.url
    if not url.startswith("postgresql"):
        return None
    from agentworld.events.feed import LogReading, WorldFeed
    from agentworld.events.log_listener import LogListener
    from agentworld.models.events import EVENT_ADAPTER
    from agentworld.storage.event_log import EventLog

    listener = LogListener(url)
    await listener.start()
    feed = WorldFeed(runtime.world, LogReading(EventLog(runtime.storage), poll=POLL_SECONDS),
                     lambda: None, listener=listener)  # fmt: skip
    try:
        await feed.start()
    except BaseException:
        await listener.aclose()
        raise
    seen = feed.head
    until: int | None = None
    caught_up = asyncio.Event()

    async def show() -> None:
        nonlocal seen
        async for item in feed.follow(feed.head):
            if item.seq is not None:
                seen = item.seq
                if until is not None and seen >= until:
                    caught_up.set()
            if item.kind == "crud" and on_change is None:
                continue
            try:
                event = EVENT_ADAPTER.validate_python(item.document)
            except ValueError:  # pydantic's ValidationError: a kind this version cannot read
                continue
            if item.kind != "crud":
                on_event(event)
            elif on_change is not None:
                try:
                    await on_change(event)
                except Exception:  # a busy database: the next look at the log says it
                    logger.debug("following %s: a change was not shown", runtime.world, exc_info=True)

    showing = asyncio.create_task(show(), name=f"follow-elsewhere:{runtime.world}")

    async def close() -> None:
        nonlocal until
        with contextlib.suppress(Exception):  # the database away: what was shown is all
            await feed.read_new()
            until = feed.head
            if seen < until:
                async with asyncio.timeout(CATCH_UP_SECONDS):
                    await caught_up.wait()
        showing.cancel()
        await asyncio.gather(showing, return_exceptions=True)
        await feed.aclose()
        await listener.aclose()

    return close
