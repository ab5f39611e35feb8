"""The event log on both backends: one increasing sequence over transcript messages and events,
read after any position without gaps or repeats, numbers never reused, and on PostgreSQL rows
of concurrent writers visible in ``seq`` order (a reader never skips one that commits late)."""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path

import asyncpg
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import asyncpg as pg_asyncpg

from agentworld.models import Chat, Message, World
from agentworld.models.events import SystemEvent
from agentworld.storage.connection import Connection
from agentworld.storage.event_log import (
    TRANSCRIPT_PAGE,
    EventLog,
    event_row,
    insert_log_rows,
    log_channel,
)
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
        await storage.append_messages(
            "w", [(None, said("c1", "one")), ("a1", said("c1", "memory only"))]
        )
        await log.append([SystemEvent(world="w", text="between", chat_id="c1")])
        await storage.append_messages("w", [(None, said("c1", "two"))])

        batch = await log.after("w", 0)

        assert [e.kind for e in batch.events] == ["message", "system", "message"]
        assert [e.document.get("message", {}).get("content") for e in batch.events] == [
            "one",
            None,
            "two",
        ]
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


def test_a_world_channel_is_a_plain_identifier_whatever_the_name() -> None:
    names = ["w", "9-Team_X", "x" * 64, "-".join("ab" * 10 for _ in range(3))]
    channels = [log_channel(name) for name in names]
    assert all(c.isidentifier() and c == c.lower() and len(c.encode()) <= 63 for c in channels)
    assert len(set(channels)) == len(names)
    assert log_channel("Team") == log_channel("team")  # names are compared without case


@pytest.fixture
def pg_db(postgres_server: str) -> str:
    return create_database(postgres_server, f"notify{os.getpid()}_{next(_numbers)}")


async def test_a_write_notifies_its_world_once_at_commit_and_a_rollback_not_at_all(
    pg_db: str,
) -> None:
    heard: asyncio.Queue[str] = asyncio.Queue()
    listener = await asyncpg.connect(pg_db)  # the test cluster's plain postgresql:// URL
    try:
        async with SQLStorage(pg_db) as storage:
            for name in ("w", "other"):
                await storage.create_world(World(name=name))
            await storage.create_chat(Chat(world="w", chat_id="c1"))
            for name in ("w", "other"):
                await listener.add_listener(
                    log_channel(name), lambda *args: heard.put_nowait(args[2])
                )
            log = EventLog(storage)

            await log.append([SystemEvent(world="w", text=f"e{n}") for n in range(3)])
            assert await asyncio.wait_for(heard.get(), 5) == log_channel("w")
            await storage.append_messages("w", [(None, said("c1", "a message"))])
            assert await asyncio.wait_for(heard.get(), 5) == log_channel("w")

            def rolled_back(conn: Connection) -> None:
                insert_log_rows(conn, [event_row(SystemEvent(world="other", text="never"))])
                raise RuntimeError("the transaction fails after its rows")

            with pytest.raises(RuntimeError):
                await storage.in_transaction(rolled_back, write=True)
            await log.append([SystemEvent(world="w", text="last")])
            # Folded: three rows, one notification; the rolled-back write told nobody.
            assert await asyncio.wait_for(heard.get(), 5) == log_channel("w")
            await asyncio.sleep(0.2)
            assert heard.empty()
    finally:
        await listener.close()


async def test_a_transcript_page_on_postgresql_reads_the_chat_index_in_order(pg_db: str) -> None:
    """No sort of every message after the position: the page costs its own rows, not the
    chat's length (``benchmarks/transcript_page.py``)."""
    async with SQLStorage(pg_db) as storage:
        await storage.create_world(World(name="w"))
        for chat in ("c1", "c2"):
            await storage.create_chat(Chat(world="w", chat_id=chat))
        for _ in range(10):  # two chats' messages interleaved, as chats running at once leave them
            await storage.append_messages(
                "w", [(None, said(chat, f"m{n}")) for n in range(100) for chat in ("c1", "c2")]
            )
    compiled = sa.text(TRANSCRIPT_PAGE.postgresql).compile(dialect=pg_asyncpg.dialect())
    values = {"world_key": "w", "chat_key": "c1", "after_seq": 0, "row_limit": 100}
    args = [values[name] for name in compiled.positiontup or ()]
    conn = await asyncpg.connect(pg_db)  # the test cluster's plain postgresql:// URL
    try:
        await conn.execute("ANALYZE messages")
        plan = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN {compiled}", *args))
    finally:
        await conn.close()
    assert "ix_messages_chat" in plan and "Sort" not in plan, plan


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
            [
                (n, SystemEvent(world="w", text=f"e{n}").model_dump_json(by_alias=True))
                for n in (1, 2, 3)
            ],
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


