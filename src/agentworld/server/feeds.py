"""The feeds of a server: one ``feed.WorldFeed`` per world that clients of the event stream
follow, made when the first client comes and ended when the last one leaves or the world is
deleted (here, or by another process); on PostgreSQL they share one ``LISTEN`` connection
(``events.log_listener.LogListener``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from agentworld.events.bus import EventBus
from agentworld.events.feed import SAFETY_POLL_SECONDS, LogReading, WorldFeed
from agentworld.models.events import CrudEvent
from agentworld.storage.event_log import EventLog

if TYPE_CHECKING:
    from agentworld.events.log_listener import LogListener


class Feeds:
    """The feeds of the worlds that have followers; each stops when its last follower leaves,
    or when its world is deleted (``deleting``).

    On PostgreSQL they share one ``LogListener`` (one connection), opened when the first world
    is followed and closed with the feeds."""

    def __init__(
        self,
        log: EventLog,
        bus_of: Callable[[str], EventBus | None],
        *,
        poll: float,
        safety_poll: float = SAFETY_POLL_SECONDS,
    ) -> None:
        self._reading = LogReading(log, poll, safety_poll)
        self._bus_of = bus_of
        self._feeds: dict[str, WorldFeed] = {}
        self._lock = asyncio.Lock()
        self._listener: LogListener | None = None
        self._deleted: dict[str, CrudEvent] = {}
        """The last delete of a world of each name (case-folded, as names are compared)."""
        self._ending: set[asyncio.Task[None]] = set()
        """Feeds being ended because their world was deleted elsewhere (kept until done)."""

    async def head(self, world: str) -> int:
        """The world's last stored position, read now (the feed of a followed world may be a
        poll behind what a client read from a transcript page)."""
        return await self._reading.log.head(world)

    @property
    def listener(self) -> LogListener | None:
        """The PostgreSQL listener, once a world is followed (None on SQLite)."""
        return self._listener

    async def _listener_for_log(self) -> LogListener | None:
        if self._listener is None and self._reading.log.url.startswith("postgresql"):
            # Imported here: asyncpg is loaded only by servers that run on PostgreSQL.
            from agentworld.events.log_listener import LogListener

            listener = LogListener(self._reading.log.url)
            await listener.start()
            self._listener = listener
        return self._listener

    @contextlib.asynccontextmanager
    async def following(self, world: str) -> AsyncIterator[WorldFeed]:
        async with self._lock:
            feed = self._feeds.get(world)
            if feed is None:
                feed = WorldFeed(
                    world,
                    self._reading,
                    lambda: self._bus_of(world),
                    listener=await self._listener_for_log(),
                    on_gone=self._gone_elsewhere,
                )
                await feed.start()
                self._feeds[world] = feed
            feed.followers += 1
        try:
            yield feed
        finally:
            async with self._lock:
                feed.followers -= 1
                if feed.followers == 0 and self._feeds.get(world) is feed:
                    del self._feeds[world]
                    await feed.aclose()

    @contextlib.asynccontextmanager
    async def deleting(self, deleted: CrudEvent) -> AsyncIterator[None]:
        """Around the delete of a world (``WorldCatalog.delete_world``): its feed takes in the
        events its log holds, while it still does, and reads no more; once the world is gone,
        every follower gets ``deleted`` after them and its stream ends. Nobody starts or stops
        following meanwhile, so no stream goes on into a world created later under its name."""
        world = deleted.world
        async with self._lock:
            feed = self._feeds.get(world)
            try:
                if feed is not None:
                    await feed.hold()
                yield
            except BaseException:
                if feed is not None:
                    feed.resume()
                raise
            self._deleted[world.casefold()] = deleted
            if feed is not None:
                del self._feeds[world]
                feed.end(deleted)
                await feed.aclose()

    def _gone_elsewhere(self, feed: WorldFeed) -> None:
        """``feed``'s world was deleted by another process (its log went with it, so no event
        says so): its followers are told as if here, and their streams end."""
        ending = asyncio.create_task(self._end_gone(feed), name=f"event-feed-end:{feed.world}")
        self._ending.add(ending)
        ending.add_done_callback(self._ending.discard)

    async def _end_gone(self, feed: WorldFeed) -> None:
        deleted = CrudEvent(world=feed.world, operation="delete", entity="world", name=feed.world)
        async with self._lock:
            if self._feeds.get(feed.world) is not feed:
                return  # deleted here meanwhile (``deleting``), or already left
            del self._feeds[feed.world]
            self._deleted[feed.world.casefold()] = deleted
            feed.end(deleted)
            await feed.aclose()

    def last_deleted(self, world: str) -> CrudEvent | None:
        """The last delete of a world of this name, to tell whether the world a stream was
        asked for is gone by the time it follows it."""
        return self._deleted.get(world.casefold())

    async def aclose(self) -> None:
        feeds, self._feeds = list(self._feeds.values()), {}
        for feed in feeds:
            await feed.aclose()
        for ending in list(self._ending):  # each found its feed gone from ``_feeds`` or closed it
            with contextlib.suppress(asyncio.CancelledError):
                await ending
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.aclose()
