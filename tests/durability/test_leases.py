"""Chat leases and the persisted inbox, at the storage level, on SQLite and PostgreSQL: a live
holder is never robbed, a lapsed or provably dead one is taken over, items keep their order."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from agentworld.models import Chat, Message, World
from agentworld.models.work import InboxChange, Loop, Route, Turn
from agentworld.storage.leases import owner_gone, process_identity, runtime_identity
from agentworld.storage.sql import SQLStorage
from agentworld.testing.postgres import create_database


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(db_url) as store:
        await store.create_world(World(name="w"))
        await store.create_chat(Chat(world="w", chat_id="c1"))
        yield store


def _dead_owner() -> str:
    """The identity of a process of this host that has exited."""
    proc = subprocess.run(
        [sys.executable, "-c", "from agentworld.storage.leases import runtime_identity as r; print(r())"],
        capture_output=True, text=True, check=True,
    )
    return proc.stdout.strip()


async def test_a_live_holder_keeps_the_chat_and_may_renew(storage: SQLStorage) -> None:
    me = process_identity()
    other = f"elsewhere.example:{4242}:1"  # another host: assumed alive until its lease lapses
    assert await storage.leases.claim("w", "c1", other, ttl=30)
    assert not await storage.leases.claim("w", "c1", me, ttl=30)
    assert await storage.leases.holder("w", "c1") == other
    assert await storage.leases.renew("w", "c1", other, ttl=30)
    assert not await storage.leases.renew("w", "c1", me, ttl=30)
    await storage.leases.release("w", "c1", me)  # not ours: nothing happens
    assert await storage.leases.holder("w", "c1") == other
    await storage.leases.release("w", "c1", other)
    assert await storage.leases.holder("w", "c1") is None
    assert await storage.leases.claim("w", "c1", me, ttl=30)


async def test_a_lapsed_lease_is_taken_over(storage: SQLStorage) -> None:
    other = "elsewhere.example:4242:1"
    assert await storage.leases.claim("w", "c1", other, ttl=0.05)
    assert not await storage.leases.claim("w", "c1", process_identity(), ttl=30)
    await asyncio.sleep(0.1)
    assert await storage.leases.claim("w", "c1", process_identity(), ttl=30)
    assert not await storage.leases.renew("w", "c1", other, ttl=30)  # the old holder lost it


async def test_a_dead_holder_on_this_host_is_taken_over_at_once(storage: SQLStorage) -> None:
    dead = _dead_owner()
    assert dead.startswith(f"{socket.gethostname()}:")
    assert owner_gone(dead)
    assert not owner_gone(process_identity())
    assert await storage.leases.claim("w", "c1", dead, ttl=3600)
    assert await storage.leases.claim("w", "c1", process_identity(), ttl=30)
    assert await storage.leases.holder("w", "c1") == process_identity()


def test_a_recycled_pid_is_not_mistaken_for_the_holder() -> None:
    host, pid, start, token = runtime_identity().split(":")
    assert start != "0" and token
    assert owner_gone(f"{host}:{pid}:{int(start) + 1}:{token}")  # same pid, another start
    assert not owner_gone(f"{host}:{pid}:{start}:{token}")
    assert not owner_gone(runtime_identity())  # another runtime of this live process


async def test_only_one_of_many_concurrent_claims_wins(db_url: str, storage: SQLStorage) -> None:
    stores = [await SQLStorage(db_url).open() for _ in range(4)]
    try:
        owners = [f"elsewhere.example:{n}:1" for n in range(8)]
        won = await asyncio.gather(
            *(stores[n % 4].leases.claim("w", "c1", owner, ttl=30) for n, owner in enumerate(owners))
        )
        assert sum(won) == 1
        assert await storage.leases.holder("w", "c1") == owners[won.index(True)]
    finally:
        for store in stores:
            await store.close()


async def test_continuations_take_the_place_of_the_item_they_continue(storage: SQLStorage) -> None:
    first = Message(chat_id="c1", role="user", sender="human", content="first")
    second = Message(chat_id="c1", role="user", sender="human", content="second")
    await storage.inbox.change("w", InboxChange("c1", append=(Route(message=first),)))
    await storage.inbox.change("w", InboxChange("c1", append=(Route(message=second),)))
    head = await storage.inbox.first("w", "c1")
    assert head is not None and head.work == Route(message=first)

    turns = (Turn(agent="a", message=first), Turn(agent="b", message=first))
    await storage.inbox.change("w", InboxChange("c1", current=head.item_id, becomes=turns))
    loop = Loop(agent="a", answer_to="human", reply_to=first.message_id)
    await storage.inbox.change("w", InboxChange("c1", current=head.item_id, becomes=(loop,)))

    assert [q.work for q in await storage.inbox.items("w", "c1")] == [
        loop, Turn(agent="b", message=first), Route(message=second)
    ]
    await storage.inbox.change("w", InboxChange("c1", current=head.item_id, becomes=()))
    assert [q.work for q in await storage.inbox.items("w", "c1")] == [
        Turn(agent="b", message=first), Route(message=second)
    ]
    assert await storage.inbox.chats_with_work("w") == ["c1"]
    assert await storage.inbox.has_work("w", "c1")
    assert not await storage.inbox.has_work("w", "other")


async def test_finishing_lets_an_idle_chat_go_and_keeps_a_busy_or_foreign_one(storage: SQLStorage) -> None:
    await _finishing(storage, "w")


async def test_finishing_on_postgres_too(postgres_server: str) -> None:
    world = f"fin{os.getpid()}"
    async with SQLStorage(create_database(postgres_server, f"leases{os.getpid()}")) as store:
        await store.create_world(World(name=world))
        await store.create_chat(Chat(world=world, chat_id="c1"))
        try:
            await _finishing(store, world)
        finally:
            await store.delete_world(world)


async def _finishing(storage: SQLStorage, w: str) -> None:
    me, other = runtime_identity(), _dead_owner()
    assert await storage.leases.claim(w, "c1", me, ttl=20)
    queued = Message(chat_id="c1", role="user", sender="human", content="more")
    await storage.inbox.change(w, InboxChange("c1", append=(Route(message=queued),)))
    kept = await storage.leases.release_or_next(w, "c1", me)  # work queued: kept
    assert kept is not None and kept.work == Route(message=queued)
    assert await storage.leases.holder(w, "c1") == me

    await storage.inbox.change(w, InboxChange("c1", current=kept.item_id, becomes=()))
    await storage.append_messages(w, [(None, queued)])
    assert await storage.leases.release_or_next(w, "c1", other) is None  # not theirs
    assert await storage.leases.holder(w, "c1") == me
    assert await storage.untitled_chat(w, "c1") is not None
    # idle: released, with the title the finished work found, in the same transaction
    assert await storage.leases.release_or_next(w, "c1", me, title="Queued work") is None
    assert await storage.leases.holder(w, "c1") is None
    assert (await storage.get_chat(w, "c1")).name == "Queued work"
    assert await storage.untitled_chat(w, "c1") is None
    assert await storage.leases.release_or_next(w, "c1", me) is None  # nothing held

    # A generated title never replaces a name a person gave meanwhile.
    await storage.create_chat(Chat(world=w, chat_id="c2"))
    assert await storage.leases.claim(w, "c2", me, ttl=20)
    await storage.rename_chat(w, "c2", "My own name")
    assert await storage.leases.release_or_next(w, "c2", me, title="Generated") is None
    assert (await storage.get_chat(w, "c2")).name == "My own name"
    assert await storage.leases.holder(w, "c2") is None
