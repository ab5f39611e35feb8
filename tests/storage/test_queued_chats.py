"""``InboxStore.queued_chats``: the one read that answers every ``send`` waiting in a process
for chats Temporal workers run, on both backends. A chat whose work is done must leave the set
(or its waiter never returns); a chat with work, or another world's chat, must not be missing
or counted (a waiter would return before its answer exists)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentworld.models import Chat, Message, World
from agentworld.models.work import InboxChange, Route
from agentworld.storage.sql import SQLStorage


@pytest.fixture
async def storage(both_backends_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(both_backends_url) as store:
        for world in ("lab", "other"):
            await store.create_world(World(name=world))
            for chat in ("c1", "c2", "c3"):
                await store.create_chat(Chat(world=world, chat_id=chat))
        yield store


async def test_the_chats_with_queued_work_and_only_those(storage: SQLStorage) -> None:
    assert await storage.inbox.queued_chats("lab") == set()
    for chat in ("c1", "c3"):
        hi = Message(chat_id=chat, role="user", sender="human", content="@a1 hi")
        await storage.inbox.change("lab", InboxChange(chat, append=(Route(message=hi), Route(message=hi))))
    assert await storage.leases.claim("lab", "c2", "a process", ttl=30)  # a lease is not work

    assert await storage.inbox.queued_chats("lab") == {"c1", "c3"}
    assert await storage.inbox.queued_chats("other") == set()

    (first, second) = [q.item_id for q in await storage.inbox.items("lab", "c1")]
    await storage.inbox.change("lab", InboxChange("c1", current=first, becomes=()))
    assert await storage.inbox.queued_chats("lab") == {"c1", "c3"}
    await storage.inbox.change("lab", InboxChange("c1", current=second, becomes=()))
    assert await storage.inbox.queued_chats("lab") == {"c3"}
