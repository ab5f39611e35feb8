"""A cut at the storage level (``storage.cuts``) and the chat's lease, on both backends: a live
holder elsewhere refuses it and nothing is removed; a free chat is cut without being left
claimed; a holder that is provably gone does not stop it; the chat's count of cuts grows."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from agentworld.errors import BusyError
from agentworld.models import Chat, Message, World
from agentworld.storage.leases import runtime_identity
from agentworld.storage.sql import SQLStorage
from agentworld.storage.statement import Sql

ELSEWHERE = "elsewhere.example:4242:1"


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(db_url) as store:
        await store.create_world(World(name="w"))
        await store.create_chat(Chat(world="w", chat_id="c1"))
        yield store


async def _said(storage: SQLStorage, *texts: str) -> list[Message]:
    messages = [Message(chat_id="c1", role="user", sender="human", content=t) for t in texts]
    for message in messages:
        await storage.post_to_chat("w", message)
    return messages


_CUTS = Sql("SELECT cuts FROM chats WHERE world = 'w' AND chat_id = 'c1'")


async def _cuts(storage: SQLStorage) -> int:
    return int(await storage.in_transaction(lambda conn: conn.execute(_CUTS).scalar(), write=False))


def _dead_owner() -> str:
    """The lease identity of a process of this host that has exited."""
    return subprocess.run(
        [sys.executable, "-c", "from agentworld.storage.leases import runtime_identity as r; print(r())"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()


async def test_a_live_holder_elsewhere_refuses_the_cut(storage: SQLStorage) -> None:
    first, second = await _said(storage, "one", "two")
    assert await storage.leases.claim("w", "c1", ELSEWHERE, ttl=60)

    with pytest.raises(BusyError, match=ELSEWHERE):
        await storage.cuts.cut("w", "c1", second.message_id, owner=runtime_identity())

    assert [m.content for m in await storage.transcript("w", "c1")] == ["one", "two"]
    assert await storage.leases.holder("w", "c1") == ELSEWHERE
    assert await _cuts(storage) == 0


async def test_a_free_chat_is_cut_and_left_free_and_a_gone_holder_does_not_stop_it(
    storage: SQLStorage,
) -> None:
    first, second, third = await _said(storage, "one", "two", "three")
    me = runtime_identity()

    cut = await storage.cuts.cut("w", "c1", third.message_id, owner=me)

    assert cut.removed == (third.message_id,) and cut.after_seq is None
    assert await storage.leases.holder("w", "c1") is None
    gone = _dead_owner()
    assert await storage.leases.claim("w", "c1", gone, ttl=3600)

    cut = await storage.cuts.cut("w", "c1", second.message_id, owner=me)

    assert cut.removed == (second.message_id,)
    assert [m.content for m in await storage.transcript("w", "c1")] == ["one"]
    assert await _cuts(storage) == 2
    assert await storage.leases.claim("w", "c1", me, ttl=60)  # held by the caller: kept
    await storage.cuts.cut("w", "c1", first.message_id, owner=me)
    assert await storage.leases.holder("w", "c1") == me
