"""How storage work runs (one transaction per method; for SQLite in place or on one worker
thread), and the incremental reads and combined writes the runtime uses on every turn."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentworld.errors import AlreadyExistsError, StorageError
from agentworld.models import Agent, Chat, Message, ToolCall, World
from agentworld.storage.checkpoints import COMMITS_PER_CHECKPOINT
from agentworld.storage.connection import Connection
from agentworld.storage.sql import SQLStorage
from agentworld.storage.sqlite_direct import DirectConnection
from agentworld.storage.statement import Sql
from agentworld.storage.url import sqlite_file
from agentworld.testing.postgres import create_database


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(db_url) as store:
        await store.create_world(World(name="lab"))
        for name in ("alice", "bob"):
            await store.create_agent(Agent(world="lab", name=name, provider="openai", model="m"))
        yield store


def said(chat: str, agent: str, content: str, **fields: Any) -> Message:
    return Message(
        chat_id=chat, role="assistant", sender=agent, agent_id=agent, content=content, **fields
    )


def heard(chat: str, content: str) -> Message:
    return Message(chat_id=chat, role="user", sender="human", content=content)


def db_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("agentworld-db")]


# -- chat_exists -----------------------------------------------------------------


async def test_chat_exists_only_for_a_created_chat_of_that_world(storage: SQLStorage) -> None:
    await storage.create_world(World(name="other"))
    await storage.create_chat(Chat(world="lab", chat_id="c1"))

    assert await storage.chat_exists("lab", "c1")
    assert not await storage.chat_exists("lab", "c2")
    assert not await storage.chat_exists("other", "c1")
    assert not await storage.chat_exists("nowhere", "c1")


async def test_messages_alone_do_not_make_a_chat_exist(storage: SQLStorage) -> None:
    await storage.append_messages("lab", [(None, heard("loose", "hello"))])

    assert not await storage.chat_exists("lab", "loose")


# -- memory_since ------------------------------------------------------------------


async def test_memory_since_zero_is_the_whole_memory_of_the_chat_in_order(
    storage: SQLStorage,
) -> None:
    await storage.append_messages(
        "lab",
        [
            ("alice", heard("c1", "one")),
            (None, heard("c1", "transcript only")),
            ("bob", heard("c1", "bob's memory")),
            ("alice", heard("c2", "other chat")),
            ("alice", said("c1", "alice", "two")),
        ],
    )

    messages, last = await storage.memory_since("lab", "alice", "c1", 0)

    assert [m.content for m in messages] == ["one", "two"]
    assert messages == await storage.memory("lab", "alice", "c1")
    assert last == await storage.last_seq()


async def test_memory_since_returns_only_what_came_after_and_where_to_continue(
    storage: SQLStorage,
) -> None:
    await storage.record_agent_step("lab", "alice", [heard("c1", "old")])
    _, mark = await storage.memory_since("lab", "alice", "c1", 0)

    call = ToolCall.of("call_1", "shell", '{"cmd": "ls"}')
    await storage.record_agent_step(
        "lab",
        "alice",
        [
            said("c1", "alice", "", tool_calls=[call]),
            Message.tool_result(
                chat_id="c1", agent="alice", tool_call_id="call_1", content="a b", batch_id=None
            ),
        ],
    )
    await storage.record_agent_step("lab", "bob", [heard("c1", "not alice's")])

    new, last = await storage.memory_since("lab", "alice", "c1", mark)

    assert [m.role for m in new] == ["assistant", "tool"]
    assert new[0].tool_calls == [call]
    assert new[1].tool_call_id == "call_1"
    assert new == (await storage.memory("lab", "alice", "c1"))[1:]
    assert last > mark
    assert await storage.memory_since("lab", "alice", "c1", last) == ([], last)


async def test_memory_since_with_nothing_new_keeps_the_position(storage: SQLStorage) -> None:
    assert await storage.memory_since("lab", "alice", "c1", 0) == ([], 0)
    assert await storage.memory_since("lab", "alice", "c1", 1234) == ([], 1234)


# -- record_step_with_transcript -----------------------------------------------------


async def test_step_with_transcript_appends_both_and_counts_the_calls(
    storage: SQLStorage,
) -> None:
    answer = said("c1", "alice", "the answer", input_tokens=5, output_tokens=7)

    await storage.record_step_with_transcript("lab", "alice", [answer], [answer], llm_calls=1)

    assert await storage.memory("lab", "alice", "c1") == [answer]
    assert await storage.transcript("lab", "c1") == [answer]
    assert await storage.memory("lab", "bob") == []
    assert (await storage.get_agent("lab", "alice")).llm_call_count == 1


async def test_step_with_transcript_keeps_the_order_within_each(storage: SQLStorage) -> None:
    memory = [said("c1", "alice", f"m{i}") for i in range(3)]
    transcript = [said("c1", "alice", f"t{i}") for i in range(2)]

    await storage.record_step_with_transcript("lab", "alice", memory, transcript)

    assert [m.content for m in await storage.memory("lab", "alice", "c1")] == ["m0", "m1", "m2"]
    assert [m.content for m in await storage.transcript("lab", "c1")] == ["t0", "t1"]
    assert (await storage.get_agent("lab", "alice")).llm_call_count == 0


async def test_step_with_transcript_is_all_or_nothing(storage: SQLStorage) -> None:
    # A transcript message that bypassed validation: its NULL chat_id violates the schema
    # after the memory rows of the same step were inserted.
    broken = said("c1", "alice", "x").model_copy(update={"chat_id": None})

    with pytest.raises(StorageError, match="refused a row"):
        await storage.record_step_with_transcript(
            "lab", "alice", [said("c1", "alice", "kept?")], [broken], llm_calls=1
        )

    assert await storage.memory("lab", "alice") == []
    assert await storage.transcript("lab", "c1") == []
    assert (await storage.get_agent("lab", "alice")).llm_call_count == 0


async def test_empty_step_with_transcript_is_a_no_op(storage: SQLStorage) -> None:
    before = await storage.last_seq()

    await storage.record_step_with_transcript("lab", "alice", [], [])

    assert await storage.last_seq() == before
    assert (await storage.get_agent("lab", "alice")).llm_call_count == 0


# -- concurrency and the worker thread ------------------------------------------------


async def test_many_concurrent_writes_and_reads_from_one_loop_all_complete(
    storage: SQLStorage,
) -> None:
    chats = [f"c{i}" for i in range(20)]
    steps = 15
    for chat in chats:
        await storage.create_chat(Chat(world="lab", chat_id=chat))

    async def converse(chat: str) -> list[int]:
        """Write a step, read it back, and again; what each read saw, in order."""
        seen: list[int] = []
        mark = 0
        for i in range(steps):
            message = said(chat, "alice", f"{chat}:{i}")
            await storage.record_step_with_transcript(
                "lab", "alice", [message], [message], llm_calls=1
            )
            new, mark = await storage.memory_since("lab", "alice", chat, mark)
            seen.extend(int((m.content or "").split(":")[1]) for m in new)
            assert await storage.chat_exists("lab", chat)
        return seen

    async def count_calls() -> list[int]:
        return [await storage.add_llm_call("lab", "bob") for _ in range(50)]

    async def collide() -> int:
        """Failing writes in between must not disturb anyone else's transaction."""
        refused = 0
        for _ in range(10):
            try:
                await storage.create_chat(Chat(world="lab", chat_id="c0"))
            except AlreadyExistsError:
                refused += 1
        return refused

    async def read_worlds() -> None:
        for _ in range(30):
            world, agents = await storage.world_and_agents("lab")
            assert world.name == "lab"
            assert [a.name for a in agents] == ["alice", "bob"]

    results = await asyncio.gather(
        *(converse(chat) for chat in chats), count_calls(), collide(), read_worlds()
    )

    for seen in results[: len(chats)]:
        assert seen == list(range(steps))
    assert results[len(chats)] == list(range(1, 51))
    assert results[len(chats) + 1] == 10
    for chat in chats:
        transcript = await storage.transcript("lab", chat)
        assert [m.content for m in transcript] == [f"{chat}:{i}" for i in range(steps)]
        assert await storage.memory("lab", "alice", chat) == transcript
    assert (await storage.get_agent("lab", "alice")).llm_call_count == len(chats) * steps
    assert (await storage.get_agent("lab", "bob")).llm_call_count == 50


@pytest.mark.sqlite_only
async def test_sqlite_units_run_in_place_when_they_can_start_and_close_stops_the_worker(
    db_url: str,
) -> None:
    """No other connection holds a lock: every unit runs on the caller's thread, one at a
    time, with no hop; the worker thread (schema work ran there) stops at close."""
    before = db_threads()
    storage = await SQLStorage(db_url).open()
    threads = await asyncio.gather(
        *(
            storage.in_transaction(lambda _conn: threading.current_thread(), write=i % 2 == 0)
            for i in range(20)
        )
    )

    assert set(threads) == {threading.current_thread()}

    await storage.close()

    assert db_threads() == before


@pytest.mark.sqlite_only
async def test_a_unit_that_would_wait_goes_to_the_worker_and_later_units_queue_behind_it(
    storage: SQLStorage,
) -> None:
    """Another connection holds the write lock: the write waits on the worker thread (the
    loop goes on), and a read asked for after it runs after it, not in place ahead of it.
    Once the queue is empty, units run in place again."""
    path = sqlite_file(storage.url)
    assert path is not None
    ran: list[tuple[str, str]] = []

    def unit(label: str) -> Any:
        def record(_conn: Connection) -> None:
            ran.append((label, threading.current_thread().name))

        return record

    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        write = asyncio.ensure_future(storage.in_transaction(unit("write"), write=True))
        await asyncio.sleep(0.2)
        read = asyncio.ensure_future(storage.in_transaction(unit("read"), write=False))
        await asyncio.sleep(0.2)
        assert not write.done() and not read.done()
        assert ran == []
        holder.rollback()
        await asyncio.wait_for(asyncio.gather(write, read), timeout=10)
    finally:
        holder.close()

    assert [label for label, _ in ran] == ["write", "read"]
    assert all(name.startswith("agentworld-db") for _, name in ran)
    await storage.in_transaction(unit("after"), write=True)
    assert ran[-1] == ("after", threading.current_thread().name)


@pytest.mark.sqlite_only
async def test_a_unit_that_breaks_in_place_sends_the_next_to_a_fresh_connection(
    storage: SQLStorage,
) -> None:
    """A statement error may leave the connection unusable: the next unit runs on the worker
    with a new connection, and the one after runs in place again."""

    def connection(conn: Connection) -> tuple[int, str]:
        assert isinstance(conn, DirectConnection)
        return id(conn.driver_connection), threading.current_thread().name

    _, here = await storage.in_transaction(connection, write=False)
    assert here == threading.current_thread().name
    with pytest.raises(StorageError):
        await storage.in_transaction(
            lambda conn: conn.execute(Sql("SELECT * FROM nowhere")), write=False
        )

    second, there = await storage.in_transaction(connection, write=True)
    third, here_again = await storage.in_transaction(connection, write=False)

    assert there.startswith("agentworld-db")
    assert second == third
    assert here_again == threading.current_thread().name
    assert (await storage.world_and_agents("lab"))[0].name == "lab"


@pytest.mark.sqlite_only
async def test_wal_is_checkpointed_by_a_thread_of_its_own_while_writes_go_on(
    storage: SQLStorage,
) -> None:
    """The worker never checkpoints inside a commit; the checkpoint thread copies the log
    into the database file as writes go on, and stops at close."""
    path = sqlite_file(storage.url)
    assert path is not None
    before = path.stat().st_size
    big = "x" * 2_000  # about half a page a message: the file must grow once checkpointed
    for round_ in range(3 * COMMITS_PER_CHECKPOINT):
        await storage.record_agent_step("lab", "alice", [heard("c1", f"{round_} {big}")], llm_calls=1)
    for _ in range(100):
        if path.stat().st_size > before + 100 * len(big):
            break
        await asyncio.sleep(0.05)
    assert path.stat().st_size > before + 100 * len(big)
    assert [t.name for t in threading.enumerate() if t.name == "agentworld-checkpoint"]

    await storage.close()

    assert not [t for t in threading.enumerate() if t.name == "agentworld-checkpoint"]


@pytest.mark.sqlite_only
async def test_writes_wait_for_another_connections_write_lock_and_reads_do_not(
    storage: SQLStorage,
) -> None:
    """While another process holds the write lock, reads go on and a write waits its turn."""
    path = sqlite_file(storage.url)
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        world, _ = await asyncio.wait_for(storage.world_and_agents("lab"), timeout=5)
        assert world.name == "lab"

        write = asyncio.ensure_future(storage.add_llm_call("lab", "alice"))
        await asyncio.sleep(0.2)
        assert not write.done()  # waiting in the busy handler, not failed
        holder.rollback()
        assert await asyncio.wait_for(write, timeout=10) == 1
    finally:
        holder.close()


async def test_failed_statement_is_one_line_and_the_storage_keeps_working(
    storage: SQLStorage,
) -> None:
    with pytest.raises(StorageError) as caught:
        await storage.in_transaction(
            lambda conn: conn.execute(Sql("SELECT * FROM nowhere")), write=True
        )

    assert "\n" not in str(caught.value)
    assert "nowhere" in str(caught.value)  # the driver's own words, naming the table
    await storage.record_agent_step("lab", "alice", [heard("c1", "after")], llm_calls=1)
    assert [m.content for m in await storage.memory("lab", "alice")] == ["after"]


async def test_a_unit_that_raises_rolls_back_everything_it_wrote(storage: SQLStorage) -> None:
    class Stop(Exception):
        pass

    def half_done(conn: Connection) -> None:
        conn.execute(Sql("UPDATE agents SET llm_call_count = 99"))
        raise Stop

    with pytest.raises(Stop):
        await storage.in_transaction(half_done, write=True)

    assert (await storage.get_agent("lab", "alice")).llm_call_count == 0


async def test_storage_opened_in_one_event_loop_works_in_the_next(db_url: str) -> None:
    """The CLI opens storage per command; a thread-owned connection is not tied to a loop."""
    storage = await SQLStorage(db_url).open()
    try:
        await storage.create_world(World(name="lab"))

        def elsewhere() -> list[str]:
            return asyncio.run(_names(storage))

        assert await asyncio.to_thread(elsewhere) == ["lab"]
    finally:
        await storage.close()


async def _names(storage: SQLStorage) -> list[str]:
    return [w.name for w in await storage.list_worlds()]


# -- PostgreSQL ------------------------------------------------------------------------


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A database of its own on the session's real PostgreSQL server (``tests/conftest.py``)."""
    return create_database(postgres_server, f"backend{os.getpid()}")


async def test_postgres_runs_the_same_units(postgres_url: str) -> None:
    async with SQLStorage(postgres_url) as storage:
        name = f"pg{os.getpid()}"
        await storage.create_world(World(name=name))
        try:
            await storage.create_agent(
                Agent(world=name, name="alice", provider="openai", model="m")
            )
            await storage.create_chat(Chat(world=name, chat_id="c1"))
            with pytest.raises(AlreadyExistsError):
                await storage.create_chat(Chat(world=name, chat_id="c1"))
            call = ToolCall.of("call_1", "shell", "{}")
            step = said("c1", "alice", "hi", tool_calls=[call])
            await asyncio.gather(
                *(
                    storage.record_step_with_transcript(name, "alice", [step], [step], llm_calls=1)
                    for _ in range(5)
                )
            )
            new, last = await storage.memory_since(name, "alice", "c1", 0)
            assert [m.tool_calls for m in new] == [[call]] * 5
            assert await storage.memory_since(name, "alice", "c1", last) == ([], last)
            assert await storage.chat_exists(name, "c1")
            assert not await storage.chat_exists(name, "c2")
            _, memory = await storage.agent_and_memory(name, "alice", "c1")
            assert memory == new
            assert (await storage.get_agent(name, "alice")).llm_call_count == 5
            with pytest.raises(StorageError):
                await storage.in_transaction(
                    lambda conn: conn.execute(Sql("SELECT * FROM nowhere")), write=False
                )
        finally:
            await storage.delete_world(name)
