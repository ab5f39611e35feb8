"""The event log on both backends: one increasing sequence over transcript messages and events,
read after any position without gaps or repeats, numbers never reused, and on PostgreSQL rows
of concurrent writers visible in ``seq`` order (a reader never skips one that commits late)."""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path

import pytest

from agentworld.models import Chat, Message, World
from agentworld.models.events import SystemEvent
from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage
from agentworld.testing.postgres import create_database

_numbers = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def log_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'log.db'}"
    server = request.getfixturevalue("postgres_server")
    return create_database(server, f"log{os.getpid()}_{next(_numbers)}")


def said(chat: str, text: str) -> Message:
    return Message(chat_id=chat, role="user", sender="human", content=text)


async def test_messages_and_events_share_one_sequence(log_db: str) -> None:
    async with SQLStorage(log_db) as storage:
        log = EventLog(storage)
        await storage.create_world(World(name="w"))
        await storage.create_chat(Chat(world="w", chat_id="c1"))
        await storage.append_messages("w", [(None, said("c1", "one")), ("a1", said("c1", "memory only"))])
        await log.append([SystemEvent(world="w", text="between", chat_id="c1")])
        await storage.append_messages("w", [(None, said("c1", "two"))])

        batch = await log.after("w", 0)

        assert [e.kind for e in batch.events] == ["message", "system", "message"]
        assert [e.document.get("message", {}).get("content") for e in batch.events] == ["one", None, "two"]
        seqs = [e.seq for e in batch.events]
        assert seqs == sorted(seqs) and batch.last_seq == seqs[-1] == await log.head("w")
        assert [e.seq for e in (await log.after("w", seqs[0])).events] == seqs[1:]
        assert (await log.after("w", 0, chat_id="other")).events == []
        page = await log.transcript_page("w", "c1", limit=1)
        assert [m.content for m in page.messages] == ["one"] and page.log_head == seqs[-1]


async def test_numbers_are_never_reused_after_the_last_rows_go(log_db: str) -> None:
    async with SQLStorage(log_db) as storage:
        log = EventLog(storage)
        await storage.create_world(World(name="gone"))
        await log.append([SystemEvent(world="gone", text=f"e{n}") for n in range(3)])
        high = await log.head("gone")
        await storage.delete_world("gone")
        await storage.create_world(World(name="gone"))
        await log.append([SystemEvent(world="gone", text="after")])
        assert await log.head("gone") > high  # a client resuming after `high` gets it


async def test_concurrent_writers_become_visible_in_order(log_db: str) -> None:
    """Several processes' worth of writers (one storage each) and a reader that only ever asks
    for rows after the last it saw: at the end it has seen every row."""
    writers = [SQLStorage(log_db) for _ in range(4)]
    async with SQLStorage(log_db) as reader_storage:
        await reader_storage.create_world(World(name="busy"))
        for storage in writers:
            await storage.open()
        try:
            reader = EventLog(reader_storage)
            seen: list[int] = []
            done = asyncio.Event()

            async def read() -> None:
                last = 0
                while True:
                    finished = done.is_set()
                    batch = await reader.after("busy", last)
                    seen.extend(e.seq for e in batch.events)
                    last = batch.last_seq
                    if finished and not batch.full:
                        return

            async def write(storage: SQLStorage, n: int) -> None:
                for i in range(15):
                    await EventLog(storage).append([SystemEvent(world="busy", text=f"{n}:{i}")])

            reading = asyncio.create_task(read())
            await asyncio.gather(*(write(s, n) for n, s in enumerate(writers)))
            done.set()
            await reading
            everything = [e.seq for e in (await reader.after("busy", 0, limit=1000)).events]
            assert seen == everything and len(everything) == 60
        finally:
            for storage in writers:
                await storage.close()


OLD_EVENTS = """
CREATE TABLE events (
    seq INTEGER NOT NULL, world VARCHAR(64) NOT NULL, chat_id VARCHAR(64),
    kind VARCHAR(16) NOT NULL, payload JSON NOT NULL, created_at VARCHAR(40) NOT NULL,
    PRIMARY KEY (seq)
)
"""


async def test_a_version_6_sqlite_log_is_rebuilt_with_its_rows_and_numbers(tmp_path: Path) -> None:
    import sqlite3

    url = f"sqlite:///{tmp_path / 'old.db'}"
    async with SQLStorage(url) as storage:
        await storage.create_world(World(name="w"))
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute("DROP TABLE events")
        conn.execute(OLD_EVENTS)
        conn.executemany(
            "INSERT INTO events VALUES (?, 'w', NULL, 'system', ?, '2024-01-01T00:00:00+00:00')",
            [(n, SystemEvent(world="w", text=f"e{n}").model_dump_json(by_alias=True)) for n in (1, 2, 3)],
        )
        conn.execute("DELETE FROM events WHERE seq = 3")  # the last number, gone before the upgrade
        conn.execute("UPDATE schema_version SET version = 6")
    async with SQLStorage(url) as storage:
        log = EventLog(storage)
        assert [e.document["text"] for e in (await log.after("w", 0)).events] == ["e1", "e2"]
        await log.append([SystemEvent(world="w", text="new")])
        await storage.append_messages("w", [(None, said("c", "hi"))])
        batch = await log.after("w", 2)
        assert [e.kind for e in batch.events] == ["system", "message"]
    with sqlite3.connect(tmp_path / "old.db") as conn:
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events'").fetchone()
    assert "AUTOINCREMENT" in sql.upper()
