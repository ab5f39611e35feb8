"""Units asked for together share one SQLite transaction (``sqlite_batch``), each in its own
savepoint: one commit for all, and still each caller's own outcome."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agentworld.errors import AlreadyExistsError, StorageError
from agentworld.models import Agent, World
from agentworld.storage.connection import Connection
from agentworld.storage.sql import SQLStorage
from agentworld.storage.sqlite_direct import DirectConnection
from agentworld.storage.statement import Sql
from agentworld.storage.url import sqlite_file

pytestmark = pytest.mark.sqlite_only  # SQLite files read and written beside the store


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(db_url) as store:
        await store.create_world(World(name="lab"))
        yield store


_ADD_AGENT = Sql(
    "INSERT INTO agents (world, name, config, created_at) VALUES ('lab', :name, '{}', 't')"
)
_AGENT_NAMES = Sql("SELECT name FROM agents")


class Stop(Exception):
    pass


def add_agent(name: str) -> Callable[[Connection], str]:
    def write(conn: Connection) -> str:
        conn.execute(_ADD_AGENT, {"name": name})
        return name

    return write


def add_agent_then_fail(name: str) -> Callable[[Connection], None]:
    def write(conn: Connection) -> None:
        add_agent(name)(conn)
        raise Stop(name)

    return write


async def agent_names(storage: SQLStorage) -> list[str]:
    def read(conn: Connection) -> list[str]:
        return [row.name for row in conn.execute(_AGENT_NAMES)]

    return sorted(await storage.in_transaction(read, write=False))


async def count_commits(storage: SQLStorage) -> list[str]:
    """Every COMMIT the storage's own connection runs from now on (SQLite's trace hook)."""
    raw = await storage.in_transaction(lambda conn: _driver(conn), write=False)
    commits: list[str] = []
    raw.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    return commits


def _driver(conn: Connection) -> sqlite3.Connection:
    assert isinstance(conn, DirectConnection)
    return conn.driver_connection


async def test_units_asked_for_together_commit_together_and_each_caller_gets_its_own(
    storage: SQLStorage,
) -> None:
    commits = await count_commits(storage)

    names = await asyncio.gather(
        *(storage.in_transaction(add_agent(f"a{i:02}"), write=True) for i in range(30))
    )

    assert names == [f"a{i:02}" for i in range(30)]
    assert await agent_names(storage) == names
    # The first runs at once; the other 29 arrive while it settles and go in one batch.
    assert 2 <= len(commits) <= 4


async def test_a_unit_that_raises_in_a_batch_is_rolled_back_alone(storage: SQLStorage) -> None:
    units = [
        add_agent("first"),
        add_agent("before"),
        add_agent_then_fail("failed"),
        add_agent("after"),
    ]

    outcomes = await asyncio.gather(
        *(storage.in_transaction(unit, write=True) for unit in units), return_exceptions=True
    )

    assert outcomes[:2] == ["first", "before"]
    assert isinstance(outcomes[2], Stop)
    assert outcomes[3] == "after"
    assert await agent_names(storage) == ["after", "before", "first"]


async def test_a_refused_row_in_a_batch_is_that_callers_duplicate_only(
    storage: SQLStorage,
) -> None:
    await storage.create_agent(Agent(world="lab", name="taken", provider="openai", model="m"))

    outcomes = await asyncio.gather(
        storage.in_transaction(add_agent("one"), write=True),
        storage.in_transaction(add_agent("taken"), write=True, duplicate="agent 'taken'"),
        storage.in_transaction(add_agent("two"), write=True),
        return_exceptions=True,
    )

    assert outcomes[0] == "one" and outcomes[2] == "two"
    assert isinstance(outcomes[1], AlreadyExistsError)
    assert await agent_names(storage) == ["one", "taken", "two"]


async def test_a_caller_resumes_only_once_the_batch_is_committed(storage: SQLStorage) -> None:
    """What a caller is told is stored, another connection can already read."""
    path = sqlite_file(storage.url)
    assert path is not None
    seen_elsewhere: list[list[str]] = []

    async def write_then_look(name: str) -> None:
        await storage.in_transaction(add_agent(name), write=True)
        other = sqlite3.connect(path)
        try:
            rows = other.execute("SELECT name FROM agents WHERE name = ?", (name,)).fetchall()
        finally:
            other.close()
        seen_elsewhere.append([row[0] for row in rows])

    await asyncio.gather(*(write_then_look(f"w{i}") for i in range(10)))

    assert sorted(seen_elsewhere) == [[f"w{i}"] for i in range(10)]


async def test_a_read_in_a_batch_sees_the_writes_asked_for_before_it(storage: SQLStorage) -> None:
    def names(conn: Connection) -> list[str]:
        return sorted(row.name for row in conn.execute(_AGENT_NAMES))

    outcomes = await asyncio.gather(
        storage.in_transaction(add_agent("x"), write=True),
        storage.in_transaction(add_agent("y"), write=True),
        storage.in_transaction(names, write=False),
    )

    assert outcomes[2] == ["x", "y"]


async def test_a_caller_cancelled_before_its_batch_runs_leaves_no_trace(
    storage: SQLStorage,
) -> None:
    first = asyncio.ensure_future(storage.in_transaction(add_agent("kept"), write=True))
    dropped = asyncio.ensure_future(storage.in_transaction(add_agent("dropped"), write=True))
    last = asyncio.ensure_future(storage.in_transaction(add_agent("also kept"), write=True))
    await asyncio.sleep(0)  # all three have asked; the first ran, the others wait for the batch
    dropped.cancel()

    await asyncio.gather(first, last)

    assert dropped.cancelled()
    assert await agent_names(storage) == ["also kept", "kept"]


async def test_a_batch_that_meets_another_connections_lock_goes_to_the_worker_in_order(
    storage: SQLStorage,
) -> None:
    path = sqlite_file(storage.url)
    assert path is not None
    ran: list[tuple[str, str]] = []

    def unit(label: str) -> Callable[[Connection], None]:
        def record(_conn: Connection) -> None:
            ran.append((label, threading.current_thread().name))

        return record

    async def first_then_lock() -> None:
        await storage.in_transaction(unit("first"), write=True)

    holder = sqlite3.connect(path, isolation_level=None)
    try:
        settled = asyncio.ensure_future(first_then_lock())
        batched = [
            asyncio.ensure_future(storage.in_transaction(unit(f"b{i}"), write=i != 1))
            for i in range(3)
        ]
        await asyncio.sleep(0)  # the first ran in place; the batch is flushed next turn
        holder.execute("BEGIN IMMEDIATE")
        await asyncio.sleep(0.2)
        assert [label for label, _ in ran] == ["first"]
        holder.rollback()
        await asyncio.wait_for(asyncio.gather(settled, *batched), timeout=10)
    finally:
        holder.close()

    assert [label for label, _ in ran] == ["first", "b0", "b1", "b2"]
    assert all(name.startswith("agentworld-db") for _, name in ran[1:])


async def test_a_database_error_in_a_batch_fails_that_unit_and_the_next_unit_gets_a_fresh_connection(
    storage: SQLStorage,
) -> None:
    def where(conn: Connection) -> tuple[int, str]:
        return id(_driver(conn)), threading.current_thread().name

    def missing_table(conn: Connection) -> Any:
        return conn.execute(Sql("SELECT * FROM nowhere"))

    before, _ = await storage.in_transaction(where, write=False)
    outcomes = await asyncio.gather(
        storage.in_transaction(add_agent("in place"), write=True),
        storage.in_transaction(add_agent("batched"), write=True),
        storage.in_transaction(missing_table, write=True),
        storage.in_transaction(add_agent("batched too"), write=True),
        return_exceptions=True,
    )
    after, thread = await storage.in_transaction(where, write=False)

    assert isinstance(outcomes[2], StorageError) and "no such table" in str(outcomes[2])
    assert await agent_names(storage) == ["batched", "batched too", "in place"]
    assert thread.startswith("agentworld-db") and after != before


async def test_closing_with_a_batch_waiting_runs_it_first(db_url: str) -> None:
    storage = await SQLStorage(db_url).open()
    await storage.create_world(World(name="lab"))
    first = asyncio.ensure_future(storage.in_transaction(add_agent("a"), write=True))
    waiting = asyncio.ensure_future(storage.in_transaction(add_agent("b"), write=True))
    await asyncio.sleep(0)

    await storage.close()

    assert await asyncio.gather(first, waiting) == ["a", "b"]
    async with SQLStorage(db_url) as again:
        assert await agent_names(again) == ["a", "b"]
