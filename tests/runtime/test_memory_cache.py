"""The memory cache between loop iterations, over a real SQLite file: each read brings back
the agent's fresh settings and its whole memory, while asking storage only for what is new."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentworld.errors import NotFoundError
from agentworld.models import Agent, Chat, Message, World
from agentworld.runtime import memory_cache
from agentworld.runtime.memory_cache import MemoryCache
from agentworld.storage.sql import SQLStorage
from agentworld.storage.statement import Sql


class WholeReadStorage(SQLStorage):
    """SQLite standing in for a store whose rows may appear out of seq order (PostgreSQL)."""

    @property
    def commits_in_seq_order(self) -> bool:
        return False


def agent(world: str, name: str, **fields: Any) -> Agent:
    return Agent(world=world, name=name, provider="openai", model="m", **fields)


def said(chat_id: str, content: str, *, message_id: str | None = None) -> Message:
    extra = {"message_id": message_id} if message_id else {}
    return Message(chat_id=chat_id, role="user", sender="human", content=content, **extra)


def contents(memory: list[Message]) -> list[str | None]:
    return [m.content for m in memory]


async def overwrite(store: SQLStorage, world: str, message_id: str, content: str) -> None:
    """Change a stored message behind the cache's back (storage itself only appends): what a
    cached memory shows afterwards tells whether it was read again."""
    statement = Sql(
        "UPDATE messages SET content = :content WHERE world = :world AND message_id = :message_id"
    )
    params = {"content": content, "world": world, "message_id": message_id}
    await store.in_transaction(lambda conn: conn.execute(statement, params), write=True)


async def seed(store: SQLStorage, world: str = "w", agents: tuple[str, ...] = ("a1",)) -> None:
    await store.create_world(World(name=world))
    for name in agents:
        await store.create_agent(agent(world, name, system_prompt=f"I am {name}"))
    for chat_id in ("c1", "c2"):
        await store.create_chat(Chat(world=world, chat_id=chat_id))


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(db_url) as store:
        await seed(store, agents=("a1", "a2", "a3"))
        yield store


@pytest.fixture
def cache(storage: SQLStorage) -> MemoryCache:
    return MemoryCache(storage)


async def test_the_first_read_brings_settings_and_the_whole_memory(
    storage: SQLStorage, cache: MemoryCache
) -> None:
    await storage.append_messages("w", [("a1", said("c1", "one")), ("a1", said("c1", "two"))])

    settings, memory = await cache.agent_and_memory("w", "a1", "c1")

    assert (settings.name, settings.system_prompt) == ("a1", "I am a1")
    assert contents(memory) == ["one", "two"]


async def test_remembered_messages_are_stored_and_returned_in_the_same_read(
    storage: SQLStorage, cache: MemoryCache
) -> None:
    await storage.append_messages("w", [("a1", said("c1", "earlier"))])

    _, memory = await cache.agent_and_memory("w", "a1", "c1", remember=[said("c1", "incoming")])

    assert contents(memory) == ["earlier", "incoming"]
    assert contents(await storage.memory("w", "a1", "c1")) == ["earlier", "incoming"]
    assert await storage.transcript("w", "c1") == []  # memory only, not the chat


async def test_later_reads_return_earlier_and_newly_appended_messages_in_order(
    storage: SQLStorage, cache: MemoryCache
) -> None:
    await storage.append_messages("w", [("a1", said("c1", "one"))])
    _, first = await cache.agent_and_memory("w", "a1", "c1")

    await storage.record_agent_step("w", "a1", [said("c1", "two"), said("c1", "three")])
    _, second = await cache.agent_and_memory("w", "a1", "c1", remember=[said("c1", "four")])
    _, third = await cache.agent_and_memory("w", "a1", "c1")

    assert contents(first) == ["one"]
    assert contents(second) == ["one", "two", "three", "four"]
    assert contents(third) == contents(second)
    assert contents(third) == contents(await storage.memory("w", "a1", "c1"))


async def test_changing_a_returned_memory_does_not_change_the_next_read(
    storage: SQLStorage, cache: MemoryCache
) -> None:
    await storage.append_messages("w", [("a1", said("c1", "one"))])
    _, memory = await cache.agent_and_memory("w", "a1", "c1")

    memory.append(said("c1", "only in the caller's list"))
    memory.clear()

    _, again = await cache.agent_and_memory("w", "a1", "c1")
    assert contents(again) == ["one"]


async def test_settings_are_read_fresh_on_every_call(
    storage: SQLStorage, cache: MemoryCache
) -> None:
    await cache.agent_and_memory("w", "a1", "c1")
    await storage.update_agent(agent("w", "a1", system_prompt="changed", temperature=0.25))

    settings, _ = await cache.agent_and_memory("w", "a1", "c1")

    assert (settings.system_prompt, settings.temperature) == ("changed", 0.25)


async def test_memories_are_kept_apart_by_agent_and_by_chat(
    storage: SQLStorage, cache: MemoryCache
) -> None:
    await storage.append_messages(
        "w",
        [
            ("a1", said("c1", "a1 in c1")),
            ("a2", said("c1", "a2 in c1")),
            ("a1", said("c2", "a1 in c2")),
            (None, said("c1", "transcript only")),
        ],
    )
    for key in (("a1", "c1"), ("a2", "c1"), ("a1", "c2")):
        await cache.agent_and_memory("w", *key)  # every key cached before more rows arrive
    await storage.append_messages("w", [("a2", said("c1", "a2 again")), ("a1", said("c2", "a1 again"))])

    assert contents((await cache.agent_and_memory("w", "a1", "c1"))[1]) == ["a1 in c1"]
    assert contents((await cache.agent_and_memory("w", "a2", "c1"))[1]) == ["a2 in c1", "a2 again"]
    assert contents((await cache.agent_and_memory("w", "a1", "c2"))[1]) == ["a1 in c2", "a1 again"]


async def test_an_unknown_agent_is_not_found(cache: MemoryCache) -> None:
    with pytest.raises(NotFoundError, match="nobody"):
        await cache.agent_and_memory("w", "nobody", "c1")


async def test_forgetting_an_agent_lets_a_recreated_agent_of_that_name_start_empty(
    storage: SQLStorage, cache: MemoryCache
) -> None:
    await storage.append_messages("w", [("a1", said("c1", "from the old a1"))])
    await cache.agent_and_memory("w", "a1", "c1")
    await storage.delete_agent("w", "a1")
    await storage.create_agent(agent("w", "a1", system_prompt="new a1"))

    cache.forget("w", "a1")
    settings, memory = await cache.agent_and_memory("w", "a1", "c1")

    assert settings.system_prompt == "new a1"
    assert memory == []


async def test_forgetting_a_world_drops_the_memories_of_all_its_agents(
    storage: SQLStorage, cache: MemoryCache
) -> None:
    await storage.append_messages(
        "w", [("a1", said("c1", "old a1")), ("a2", said("c2", "old a2"))]
    )
    await cache.agent_and_memory("w", "a1", "c1")
    await cache.agent_and_memory("w", "a2", "c2")
    await storage.delete_world("w")
    await seed(storage, agents=("a1", "a2"))

    cache.forget("w")

    assert (await cache.agent_and_memory("w", "a1", "c1"))[1] == []
    assert (await cache.agent_and_memory("w", "a2", "c2"))[1] == []


async def test_forget_drops_only_the_named_world_and_agent(
    storage: SQLStorage, cache: MemoryCache
) -> None:
    """A message changed in storage reaches a cached memory only through ``forget``,
    so what stays cached shows which entries ``forget`` left alone."""
    await seed(storage, world="other")
    shared = said("c1", "original", message_id="msg_shared")
    await storage.append_messages("w", [("a1", shared), ("a2", shared)])
    await storage.append_messages("other", [("a1", shared)])
    for world, name in (("w", "a1"), ("w", "a2"), ("other", "a1")):
        await cache.agent_and_memory(world, name, "c1")
    await overwrite(storage, "w", "msg_shared", "rewritten")
    await overwrite(storage, "other", "msg_shared", "rewritten")

    cache.forget("w", "a1")

    assert contents((await cache.agent_and_memory("w", "a1", "c1"))[1]) == ["rewritten"]
    assert contents((await cache.agent_and_memory("w", "a2", "c1"))[1]) == ["original"]
    assert contents((await cache.agent_and_memory("other", "a1", "c1"))[1]) == ["original"]
    cache.forget("other")
    assert contents((await cache.agent_and_memory("other", "a1", "c1"))[1]) == ["rewritten"]


async def test_beyond_the_limit_the_least_recently_read_memory_is_dropped(
    storage: SQLStorage, cache: MemoryCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_cache, "MAX_ENTRIES", 2)
    shared = said("c1", "original", message_id="msg_shared")
    await storage.append_messages("w", [("a1", shared), ("a2", shared), ("a3", shared)])
    await cache.agent_and_memory("w", "a1", "c1")
    await cache.agent_and_memory("w", "a2", "c1")
    await cache.agent_and_memory("w", "a1", "c1")  # a1 is now the most recently read
    await cache.agent_and_memory("w", "a3", "c1")  # one too many: a2 goes
    await overwrite(storage, "w", "msg_shared", "rewritten")

    # Only the dropped entry is read whole again and so sees the rewrite.
    assert contents((await cache.agent_and_memory("w", "a2", "c1"))[1]) == ["rewritten"]
    assert contents((await cache.agent_and_memory("w", "a3", "c1"))[1]) == ["original"]


async def test_a_store_without_seq_ordered_commits_is_read_whole_every_time(
    db_url: str,
) -> None:
    async with WholeReadStorage(db_url) as store:
        await seed(store)
        cache = MemoryCache(store)
        shared = said("c1", "original", message_id="msg_shared")
        await store.append_messages("w", [("a1", shared)])
        await cache.agent_and_memory("w", "a1", "c1")
        await overwrite(store, "w", "msg_shared", "rewritten")

        _, memory = await cache.agent_and_memory("w", "a1", "c1", remember=[said("c1", "new")])
        _, again = await cache.agent_and_memory("w", "a1", "c1")

        assert contents(memory) == ["rewritten", "new"]
        assert contents(again) == ["rewritten", "new"]
        assert contents(await store.memory("w", "a1", "c1")) == ["rewritten", "new"]


async def test_a_first_read_reads_only_the_window_of_an_agent_that_has_one(
    storage: SQLStorage, cache: MemoryCache
) -> None:
    """A fresh process answering in a long chat does not load what the agent is not shown;
    later reads append, and the cache keeps no more than twice the window."""
    await storage.update_agent(agent("w", "a1", memory_window=20))
    await storage.append_messages("w", [("a1", said("c1", f"m{i}")) for i in range(50)])
    await storage.append_messages("w", [("a2", said("c1", f"m{i}")) for i in range(50)])

    _, first = await cache.agent_and_memory("w", "a1", "c1")
    _, whole = await cache.agent_and_memory("w", "a2", "c1")  # the default window holds all 50
    assert contents(first) == [f"m{i}" for i in range(30, 50)]
    assert len(whole) == 50

    await storage.append_messages("w", [("a1", said("c1", f"n{i}")) for i in range(19)])
    _, second = await cache.agent_and_memory("w", "a1", "c1")
    assert contents(second) == [f"m{i}" for i in range(30, 50)] + [f"n{i}" for i in range(19)]
    await storage.append_messages("w", [("a1", said("c1", "n19")), ("a1", said("c1", "n20"))])
    _, third = await cache.agent_and_memory("w", "a1", "c1")
    assert contents(third) == [f"n{i}" for i in range(1, 21)]  # over 40: cut to the window

    uncached = WholeReadStorage(storage.url)
    async with uncached:
        _, read_whole = await MemoryCache(uncached).agent_and_memory("w", "a1", "c1")
    assert contents(read_whole) == [f"n{i}" for i in range(1, 21)]
