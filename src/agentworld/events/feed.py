"""One feed per world that clients of the event stream follow (SPEC §3.1).

A feed reads the world's event log (``storage/event_log.py``) — so events of every process
that runs the world arrive, in the log's order — and keeps the recent ones in memory, so a
hundred clients cost one read, not a hundred. It reads when this process's own runtime
publishes something (at once), and for events stored by other processes (a CLI ``send``, another
server):

* on PostgreSQL when the log's notification arrives (``events/log_listener.py``: writers
  ``pg_notify`` in the transaction that stores the event, delivered at commit), with a slow poll
  every ``safety_poll`` seconds in case one is ever missed — and every ``poll`` seconds while
  the listening connection is down;
* on SQLite, which has no such signal, every ``poll`` seconds.

Token chunks are never stored; the feed takes them from this process's event bus and places
them among the stored events in the order they happened, as items without a ``seq``. On
PostgreSQL it also takes the chunks of turns other processes run (another server, a ``send``, a
Temporal worker), which they relay on the world's live channel (``events/log_listener.py``,
``events/live_relay.py``): it reads the log first when told of new events, so a chunk comes
after its answer's ``start``. So does
the world's delete (``feeds.Feeds.deleting``), whose log goes with the world: it ends the feed. A world
deleted by another process leaves no event behind; the feed's read that finds nothing new also
finds the world gone, and ends the feed the same way.

A client follows from a position (``Last-Event-ID``): it reads from the log itself until it
reaches what the feed keeps, then takes the feed's items; if it falls behind what the feed
keeps (a slow client), it reads from the log again. Positions only grow and are never
reused, so it gets every stored event after its position once, in order.

A read that fails (the database is down or restarting) is tried again, less and less often
(``retry_seconds``), until the database answers; the feed then reads from the last position it
took in, so its followers, who stayed connected, get what was stored meanwhile once each.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworld.errors import StorageError
from agentworld.events.bus import EventBus
from agentworld.models.events import CrudEvent, EventKind, SSEEvent, WorldEvent
from agentworld.storage.event_log import EventLog, LogBatch

if TYPE_CHECKING:
    from agentworld.events.log_listener import LogListener

logger = logging.getLogger("agentworld.server")

READ_LIMIT = 500
TURN_EVERY = 3
"""Items a follower hands out at once (a replay, a burst) between turns of the event loop.
Writing to a socket never waits, so without these turns a client that hung up would be noticed
at the end of the batch only, after every write into the dead connection had been logged; a
turn for every item costs CPU with many clients (``benchmarks/event_delivery.py``)."""
SAFETY_POLL_SECONDS = 2.0
"""How often a feed that is told of new events (PostgreSQL) reads the log anyway."""
RELAYED_LIMIT = 1000
"""Batches of chunks from other processes waiting to go in at most (``_take_in``)."""
STREAMS_REMEMBERED = 1000
"""Answers whose stream's start (and end) the feed remembers, the newest (``_take_relayed``)."""
LONGEST_RETRY_SECONDS = 2.0
"""The longest wait between two reads of a log that failed (the database away)."""


def retry_seconds(failures: int, poll: float) -> float:
    """How long to wait after ``failures`` reads in a row failed: twice as long each time,
    from ``poll`` up to ``LONGEST_RETRY_SECONDS`` (or ``poll``, if it is longer)."""
    return min(poll * 2 ** min(failures, 16), max(LONGEST_RETRY_SECONDS, poll))


@dataclass(frozen=True)
class FeedItem:
    """An event as the stream sends it: its log position (None for a live token chunk), kind,
    chat and JSON document."""

    seq: int | None
    kind: EventKind
    chat_id: str | None
    document: dict[str, Any]


def _remember(streams: OrderedDict[str, None], message_id: object) -> None:
    if isinstance(message_id, str):
        streams[message_id] = None
        if len(streams) > STREAMS_REMEMBERED:
            streams.popitem(last=False)


def live_item(event: WorldEvent) -> FeedItem:
    """An event as this process holds it, not read from the log: it has no position."""
    return FeedItem(None, event.kind, event.chat, event.model_dump(mode="json", by_alias=True))


@dataclass(frozen=True)
class LogReading:
    """How every feed of a server reads the event log: ``log`` itself, every ``poll`` seconds
    (every ``safety_poll`` seconds while notifications arrive), keeping the last ``keep`` items.
    ``feeds.Feeds`` makes it once and hands it to each world's feed."""

    log: EventLog
    poll: float
    safety_poll: float = SAFETY_POLL_SECONDS
    keep: int = 2000


class WorldFeed:
    """The recent events of one world, read once for every client that follows it."""

    def __init__(
        self,
        world: str,
        reading: LogReading,
        bus_of: Callable[[], EventBus | None],
        *,
        listener: LogListener | None = None,
        on_gone: Callable[[WorldFeed], None] | None = None,
    ) -> None:
        self.world = world
        self._on_gone = on_gone
        """Told once when a read finds the world gone, deleted by another process."""
        self._gone = False
        self._reading = reading
        self._bus_of = bus_of
        self._listener = listener
        self._items: deque[tuple[int, FeedItem]] = deque()
        """(feed position, item): positions count every item, chunks too, from 0."""
        self._next_pos = 0
        self.head = 0
        """The last log ``seq`` read."""
        self._floor = 0
        """Every stored event with ``floor < seq <= head`` is among the items."""
        self._changed = asyncio.Event()
        self._poked = asyncio.Event()
        self._stored_since_read = False
        self._read_lock = asyncio.Lock()
        self._bus: EventBus | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._held = False
        """The world is being deleted: the log is read no more (``hold``)."""
        self._last: FeedItem | None = None
        """The world's delete, once it is gone: the last item there will be (``end``)."""
        self.followers = 0
        self._relayed: asyncio.Queue[list[dict[str, Any]]] = asyncio.Queue()
        """Chunk documents other processes relayed, in the order they came."""
        self._relayed_task: asyncio.Task[None] | None = None
        self._started: OrderedDict[str, None] = OrderedDict()
        """Answers whose stream's start the feed has read: their relayed chunks go in at once."""
        self._ended: OrderedDict[str, None] = OrderedDict()
        """Answers whose stream's end the feed has read: a chunk relayed after it is dropped,
        not sent late."""

    async def start(self) -> None:
        # Listen before reading the head: whatever commits after the read is announced.
        if self._listener is not None:
            await self._listener.watch(self.world, self._poked.set)
            await self._listener.watch_live(self.world, self._take_in)
        try:
            self.head = self._floor = await self._reading.log.head(self.world)
        except BaseException:
            if self._listener is not None:
                await self._listener.unwatch(self.world, self._poked.set)
                await self._listener.unwatch_live(self.world, self._take_in)
            raise
        if self._listener is not None:
            self._relayed_task = asyncio.create_task(
                self._take_relayed(), name=f"event-feed-chunks:{self.world}"
            )
        self._attach()
        self._task = asyncio.create_task(self._run(), name=f"event-feed:{self.world}")

    async def aclose(self) -> None:
        if self._listener is not None:
            await self._listener.unwatch(self.world, self._poked.set)
            await self._listener.unwatch_live(self.world, self._take_in)
        if self._relayed_task is not None:
            self._relayed_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._relayed_task
            self._relayed_task = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # -- the world's delete ----------------------------------------------------------------

    async def hold(self) -> None:
        """Take in every event the log holds now, then read it no more: the world's rows are
        about to go, and a world created later under its name would write to the same log."""
        async with self._read_lock:  # after a read under way, not cutting it short
            await self._read_log()
            self._held = True

    def resume(self) -> None:
        """The delete was refused: read the log again, at once."""
        self._held = False
        self._poked.set()

    def end(self, deleted: CrudEvent) -> None:
        """The world is gone: ``deleted`` is the last item, sent to every follower after what
        came before, whatever chat it follows; then ``follow`` ends."""
        self._last = live_item(deleted)
        self._append(self._last)
        self._notify()

    # -- reading ---------------------------------------------------------------------------

    def _wait_seconds(self) -> float:
        """The safety net while notifications arrive; the plain poll otherwise."""
        if self._listener is not None and self._listener.listening:
            return self._reading.safety_poll
        return self._reading.poll

    async def _run(self) -> None:
        failures = 0
        while True:
            wait = retry_seconds(failures, self._reading.poll) if failures else self._wait_seconds()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._poked.wait()
            self._poked.clear()
            self._attach()
            try:
                await self.read_new()
            except Exception as exc:  # the database is away: say so once, try again later
                failures += 1
                if failures == 1:
                    logger.warning("event feed of world %s cannot read the log (trying again): %s",
                                   self.world, exc, exc_info=not isinstance(exc, StorageError))
                continue
            if failures:
                logger.warning("event feed of world %s reads the log again", self.world)
                failures = 0
            if self._gone and self._on_gone is not None:
                self._on_gone(self)  # which ends the feed (``feeds.Feeds``); nothing more to read
                return

    async def read_new(self) -> None:
        """Take every event stored after ``head`` into the items."""
        async with self._read_lock:
            if not self._held:
                await self._read_log()

    async def _read_log(self) -> None:
        self._stored_since_read = False
        added = False
        while True:
            batch = await self._reading.log.after(
                self.world, self.head, limit=READ_LIMIT, or_gone=self._on_gone is not None
            )
            self._gone = batch.world_gone
            for event in batch.events:
                self._append(FeedItem(event.seq, event.kind, event.chat_id, event.document))
                if event.kind == "sse":
                    phase = event.document.get("phase")
                    _remember(self._started if phase == "start" else self._ended, event.document.get("messageId"))
                added = True
            self.head = batch.last_seq
            if not batch.full:
                break
        if added:
            self._notify()

    def _append(self, item: FeedItem) -> None:
        self._items.append((self._next_pos, item))
        self._next_pos += 1
        while len(self._items) > self._reading.keep:
            _pos, dropped = self._items.popleft()
            if dropped.seq is not None:
                self._floor = dropped.seq

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # -- this process's bus ----------------------------------------------------------------

    def _attach(self) -> None:
        """Listen to this process's runtime of the world, once it runs (or runs anew)."""
        bus = self._bus_of()
        if bus is self._bus:
            return
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._bus = bus
        if bus is not None:
            self._unsubscribe = bus.subscribe(self._on_event, name="http-event-feed")

    async def _on_event(self, event: WorldEvent) -> None:
        """Subscribed after persistence: a stored event is in the log already; read it now
        rather than at the next poll. A token chunk goes in live, after every event stored
        before it (its ``start`` above all), so clients see them in the order they happened:
        after a read under way too, which may hold such an event (on PostgreSQL a read waits
        for the server, and the chunk would otherwise overtake it)."""
        if isinstance(event, SSEEvent) and event.phase == "chunk":
            if self._stored_since_read or self._read_lock.locked():
                await self.read_new()
            self._append(live_item(event))
            self._notify()
            return
        self._stored_since_read = True
        self._poked.set()

    def _take_in(self, documents: list[dict[str, Any]]) -> None:
        """Chunks relayed by another process, queued in the order they came; left out while
        the queue is full (a feed that cannot read the log): chunks are best effort."""
        if self._relayed.qsize() < RELAYED_LIMIT:
            self._relayed.put_nowait(documents)

    async def _take_relayed(self) -> None:
        """The chunks of other processes' turns, as live items, in the order they happened:
        after their answer's ``start`` (read from the log first when the feed has not seen it)
        and before its ``end`` — the relay sends an answer's chunks before its end is stored,
        and a chunk that still comes after its end is dropped (chunks are best effort, L3)."""
        while True:
            documents = await self._relayed.get()
            if self._last is not None:
                continue  # the world is gone
            started = all(d.get("messageId") in self._started for d in documents)
            if not started and (self._poked.is_set() or self._stored_since_read or self._read_lock.locked()):
                with contextlib.suppress(Exception):  # a failed read is the feed's to retry
                    await self.read_new()
            for document in documents:
                if document.get("messageId") in self._ended:
                    continue
                chat_id = document.get("chatId")
                self._append(FeedItem(None, "sse", chat_id if isinstance(chat_id, str) else None,
                                      document))
            self._notify()

    # -- following -------------------------------------------------------------------------

    async def follow(self, after: int, *, chat_id: str | None = None) -> AsyncIterator[FeedItem]:
        """Every stored event after log position ``after`` (of one chat, if given), then every
        new one as it comes, token chunks included; ends only with the world (``end``). Items
        at hand at once come ``TURN_EVERY`` to a turn of the event loop."""
        cursor = after
        pos: int | None = None
        while True:
            changed = self._changed
            if pos is None:
                if cursor < self._floor:  # older than what the feed keeps: read the log
                    head = self.head
                    batch = await self._read_after(cursor, chat_id)
                    for n, event in enumerate(batch.events, start=1):
                        if n % TURN_EVERY == 0:
                            await asyncio.sleep(0)
                        yield FeedItem(event.seq, event.kind, event.chat_id, event.document)
                    cursor = batch.last_seq if batch.full else max(batch.last_seq, head)
                    continue
                pos = self._join(cursor)
            at_hand = 0
            while True:
                first = self._items[0][0] if self._items else self._next_pos
                if pos < first:  # fell behind what the feed keeps
                    pos = None
                    break
                index = pos - first
                if index >= len(self._items):
                    break
                item = self._items[index][1]
                pos += 1
                if item is not self._last:  # the world's delete goes to every follower
                    if item.seq is not None:
                        if item.seq <= cursor:
                            continue
                        cursor = item.seq
                    if chat_id is not None and item.chat_id != chat_id:
                        continue
                at_hand += 1
                if at_hand % TURN_EVERY == 0:
                    await asyncio.sleep(0)
                yield item
                if item is self._last:
                    return
            if pos is None:
                continue
            await changed.wait()

    async def _read_after(self, cursor: int, chat_id: str | None) -> LogBatch:
        """A follower's own read of the log after ``cursor``, tried again until the database
        answers (the follower waits, still connected, as the feed's own reads do)."""
        failures = 0
        while True:
            try:
                return await self._reading.log.after(
                    self.world, cursor, chat_id=chat_id, limit=READ_LIMIT
                )
            except StorageError:
                failures += 1
                await asyncio.sleep(retry_seconds(failures, self._reading.poll))

    def _join(self, cursor: int) -> int:
        """The feed position of the first stored item after ``cursor`` (or of the world's
        delete), or the end."""
        for pos, item in self._items:
            if (item.seq is not None and item.seq > cursor) or item is self._last:
                return pos
        return self._next_pos
