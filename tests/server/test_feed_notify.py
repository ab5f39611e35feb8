"""Event feeds on PostgreSQL are woken by the log's notifications (LISTEN/NOTIFY): an event
another process or engine stores reaches a follower within a fraction of a second although
the feed only polls every 10 s here; concurrent writers' events arrive once each, in order; a
cut listening connection falls back to polling and listens again.

Real parts throughout: a PostgreSQL cluster (``postgres_server``), ``SQLStorage`` writers with
engines of their own or in a subprocess, and the server's ``Feeds`` with the ``LogListener``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import asyncpg
import pytest

from agentworld.events.feed import FeedItem
from agentworld.events.log_listener import APPLICATION_NAME, LogListener, connect_args
from agentworld.models import Chat, Message, World
from agentworld.models.events import SystemEvent
from agentworld.server.feeds import Feeds
from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage
from agentworld.testing.postgres import create_database

SLOW = 10.0
"""Both polls of the feeds under test: anything delivered well under this was notified."""
QUICK = 1.0

_numbers = itertools.count()


@pytest.fixture
def pg_url(postgres_server: str) -> str:
    return create_database(postgres_server, f"feed{os.getpid()}_{next(_numbers)}")


@dataclass
class Follower:
    """Everything a feed hands one follower, with when it arrived."""

    items: list[tuple[float, FeedItem]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def seqs(self) -> list[int]:
        return [item.seq for _, item in self.items if item.seq is not None]

    async def until(self, predicate: Callable[[], bool], timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.arrived.clear()
                await self.arrived.wait()


@contextlib.asynccontextmanager
async def following(
    feeds: Feeds, world: str, *, after: int | None = None
) -> AsyncIterator[Follower]:
    follower = Follower()
    started = asyncio.Event()

    async def follow() -> None:
        async with feeds.following(world) as feed:
            started.set()
            async for item in feed.follow(feed.head if after is None else after):
                follower.items.append((time.time(), item))
                follower.arrived.set()

    task = asyncio.create_task(follow())
    try:
        async with asyncio.timeout(10):
            await started.wait()
        yield follower
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@contextlib.asynccontextmanager
async def served_log(url: str, *, poll: float = SLOW) -> AsyncIterator[tuple[SQLStorage, Feeds]]:
    """The server's side: a storage and its feeds, polling only every ``poll`` seconds."""
    async with SQLStorage(url) as storage:
        feeds = Feeds(EventLog(storage), lambda _world: None, poll=poll, safety_poll=SLOW)
        try:
            yield storage, feeds
        finally:
            await feeds.aclose()


WRITER = """
import asyncio, sys, time
from agentworld.models.events import SystemEvent
from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage

async def main(url: str, world: str) -> None:
    async with SQLStorage(url) as storage:
        sys.stdin.readline()  # the test is listening: write now
        await EventLog(storage).append([SystemEvent(world=world, text="from another process")])
        print(time.time(), flush=True)  # committed

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_an_event_stored_by_another_process_reaches_a_follower_at_once(pg_url: str) -> None:
    world = "9-Team_X"  # no plain SQL identifier (digit first, "-", capitals): the channel hashes it
    async with served_log(pg_url) as (storage, feeds):
        await storage.create_world(World(name=world))
        writer = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, pg_url, world,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert writer.stdin is not None and writer.stdout is not None
        async with following(feeds, world) as follower:
            assert feeds.listener is not None and feeds.listener.listening
            writer.stdin.write(b"go\n")
            await writer.stdin.drain()
            committed = float((await writer.stdout.readline()).decode())
            await follower.until(lambda: bool(follower.items), timeout=SLOW - 2)
        assert await writer.wait() == 0

    received, item = follower.items[0]
    assert item.document["text"] == "from another process"
    assert received - committed < QUICK, f"delivered {received - committed:.3f} s after commit"


async def test_concurrent_writers_events_arrive_once_each_and_in_order(pg_url: str) -> None:
    """Four engines write events and transcript messages at once (each through its own
    notifying transaction); the follower gets exactly the log, in its order, promptly."""
    world = "busy"
    writers = [SQLStorage(pg_url) for _ in range(4)]
    async with served_log(pg_url) as (storage, feeds):
        await storage.create_world(World(name=world))
        await storage.create_chat(Chat(world=world, chat_id="c1"))
        for writer in writers:
            await writer.open()
        try:
            async with following(feeds, world, after=0) as follower:

                async def write(writer: SQLStorage, n: int) -> None:
                    log = EventLog(writer)
                    for i in range(20):
                        if i % 2:
                            message = Message(chat_id="c1", role="user", sender="human", content=f"{n}:{i}")
                            await writer.append_messages(world, [(None, message)])
                        else:
                            await log.append([SystemEvent(world=world, text=f"{n}:{i}", chat_id="c1")])

                await asyncio.gather(*(write(w, n) for n, w in enumerate(writers)))
                written = time.time()
                logged = [e.seq for e in (await EventLog(storage).after(world, 0, limit=1000)).events]
                await follower.until(lambda: len(follower.seqs()) >= len(logged), timeout=SLOW - 2)
                delay = time.time() - written
                await asyncio.sleep(0.3)  # anything doubled would come now
        finally:
            for writer in writers:
                await writer.close()

    assert len(logged) == 80
    assert follower.seqs() == logged  # every one, once, in the log's order
    assert delay < QUICK, f"the last event arrived {delay:.3f} s after the writers were done"


async def pg_backends(url: str, query: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(**connect_args(url))
    try:
        return list(await conn.fetch(query, APPLICATION_NAME))
    finally:
        await conn.close()


async def eventually(check: Callable[[], bool | Awaitable[bool]], timeout: float = 10) -> None:
    async with asyncio.timeout(timeout):
        while True:
            outcome = check()
            if outcome if isinstance(outcome, bool) else await outcome:
                return
            await asyncio.sleep(0.02)


async def test_a_cut_listening_connection_falls_back_to_polling_and_listens_again(pg_url: str) -> None:
    world = "w"
    async with (
        served_log(pg_url, poll=0.2) as (storage, feeds),
        SQLStorage(pg_url) as writer,
    ):
        await storage.create_world(World(name=world))
        log = EventLog(writer)
        async with following(feeds, world) as follower:
            listener = feeds.listener
            assert listener is not None and listener.listening
            ended = await pg_backends(
                pg_url,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            )
            assert [row[0] for row in ended] == [True]
            await eventually(lambda: not listener.listening)

            # While nobody listens, the feed polls every 0.2 s rather than every 10 s.
            await log.append([SystemEvent(world=world, text="while cut")])
            await follower.until(lambda: len(follower.items) == 1, timeout=3)

            await eventually(lambda: listener.listening)
            assert len(await pg_backends(
                pg_url, "SELECT pid FROM pg_stat_activity WHERE application_name = $1"
            )) == 1  # fmt: skip
            await log.append([SystemEvent(world=world, text="listening again")])
            sent = time.time()
            await follower.until(lambda: len(follower.items) == 2, timeout=3)

    assert [item.document["text"] for _, item in follower.items] == ["while cut", "listening again"]
    assert follower.seqs() == sorted(set(follower.seqs()))
    # After reconnecting, the feed is back on the 10 s safety net: this came by notification.
    assert follower.items[1][0] - sent < QUICK


async def test_the_listener_stops_listening_when_the_last_follower_leaves(pg_url: str) -> None:
    async with served_log(pg_url) as (storage, feeds):
        await storage.create_world(World(name="a"))
        await storage.create_world(World(name="b"))
        async with following(feeds, "a"), following(feeds, "b"):
            listening = await pg_backends(
                pg_url, "SELECT query FROM pg_stat_activity WHERE application_name = $1"
            )
            assert len(listening) == 1  # one connection for every world of the process
        listener = feeds.listener
        assert listener is not None and listener.listening

        channels = await _listened_channels(listener)
        assert channels == []  # UNLISTENed as each world's last follower left


async def _listened_channels(listener: LogListener) -> list[str]:
    conn = listener._conn
    assert conn is not None
    return [str(row[0]) for row in await conn.fetch("SELECT pg_listening_channels()")]
