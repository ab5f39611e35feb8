"""The relay of a world's live token chunks to other processes, on PostgreSQL (SPEC L3, S1).

A bus subscriber that only keeps: each ``sse`` chunk joins a bounded list and the subscriber
returns, so the model call never waits on the database. A background task, started at the
first chunk, takes what gathered over ``EVERY`` seconds, joins the chunks of one answer into
one, and sends them on the world's live channel in one statement (``storage/live_notes.py``);
the runtime ``flush``es what waits before it stores an answer's end, so a listener never gets
chunks after their end. If too many wait (the database is slow or away) chunks are dropped: they are best effort, and the stored answer follows
them. A failed send is logged once and the relay goes on. ``WorldRuntime`` makes one for every
world it runs on PostgreSQL, whoever listens: a listener may be in any process, and a relay
nobody hears costs a statement per batch (``benchmarks/live_relay.py``). Never on SQLite,
which has no other process to tell.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import Any

from agentworld.models.events import SSEEvent, WorldEvent
from agentworld.storage.live_notes import notify_live, payloads
from agentworld.storage.sql import SQLStorage

logger = logging.getLogger("agentworld.events")

EVERY = 0.05
"""Seconds the relay gathers chunks before it sends them (one statement for all of them)."""
QUEUE_LIMIT = 2000
"""Chunks waiting at most; more are dropped until the relay catches up."""
CLOSE_SECONDS = 1.0
"""How long closing waits for the chunks still queued to be sent."""


def joined(events: list[SSEEvent]) -> list[dict[str, Any]]:
    """The chunk documents of ``events``, each run of chunks of one answer joined into one
    (the first's, with their text): where a stream is cut into chunks is the provider's choice,
    and one document costs every listener less than a hundred."""
    runs: list[tuple[SSEEvent, list[str]]] = []
    for event in events:
        if runs and runs[-1][0].message_id == event.message_id and runs[-1][0].chat_id == event.chat_id:
            runs[-1][1].append(event.content)
        else:
            runs.append((event, [event.content]))
    return [{**first.model_dump(mode="json", by_alias=True), "content": "".join(parts)}
            for first, parts in runs]  # fmt: skip


class LiveRelay:
    """Sends one world's chunk events to its live channel, off the turn's path."""

    def __init__(self, storage: SQLStorage, world: str, *, every: float = EVERY) -> None:
        self._storage = storage
        self._world = world
        self._every = every
        self._pending: list[SSEEvent] = []
        """Chunks not sent yet, in the order they came."""
        self._wake = asyncio.Event()
        self._sending = asyncio.Lock()
        """Batches go out one at a time, in the order they were taken."""
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._failing = False
        self.dropped = 0
        """Chunks left out because too many were waiting."""

    @property
    def running(self) -> bool:
        """Whether the background task runs (it starts at the first chunk)."""
        return self._task is not None and not self._task.done()

    def on_event(self, event: WorldEvent) -> None:
        """The bus subscriber (``sse`` events): keep a chunk for the next batch, never wait."""
        if self._closed or not isinstance(event, SSEEvent) or event.phase != "chunk":
            return
        if len(self._pending) >= QUEUE_LIMIT:
            self.dropped += 1
            return
        self._pending.append(event)
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"live-relay:{self._world}")

    async def flush(self) -> None:
        """Send the chunks waiting now, before the caller stores their answer's end: listeners
        then get an answer's chunks before its end, however short the answer."""
        if self._pending:
            await self._send_pending()

    async def aclose(self) -> None:
        """Send what is waiting (briefly), then stop."""
        self._closed = True
        task, self._task = self._task, None
        if task is None:
            return
        with contextlib.suppress(TimeoutError):  # the batch under way too
            async with asyncio.timeout(CLOSE_SECONDS):
                await self._send_pending()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            await asyncio.sleep(self._every)
            self._wake.clear()
            await self._send_pending()

    async def _send_pending(self) -> None:
        async with self._sending:
            events, self._pending = self._pending, []
            if events:
                await self._send(events)

    async def _send(self, events: list[SSEEvent]) -> None:
        texts = payloads(joined(events))
        try:
            await self._storage.in_transaction(
                functools.partial(notify_live, world=self._world, texts=texts), write=False
            )
        except Exception as exc:  # best effort: the stored answer follows anyway
            if not self._failing:
                logger.warning("live chunks of world %s not relayed: %s", self._world, exc)
            self._failing = True
            return
        self._failing = False
