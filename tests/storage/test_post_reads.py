"""What a post reads and checks in one statement each, on both backends.

``SQLStorage.world_and_agents`` (every post reads them) must read exactly what two separate
reads did: the settings as stored, every agent of that world and no other, in creation
order, and a world with no agents is still a world. A post into a chat that is not there is
refused by its own insert, and leaves nothing behind."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentworld.errors import NotFoundError
from agentworld.models import Agent, Chat, Message, World
from agentworld.models.work import InboxChange, Route
from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage


@pytest.fixture
async def storage(both_backends_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(both_backends_url) as store:
        yield store


async def test_the_settings_and_every_agent_in_creation_order(storage: SQLStorage) -> None:
    await storage.create_world(
        World(name="lab", turn_limit=7, main_agent="zed", description="a lab", hooks=["m:f"])
    )
    await storage.create_world(World(name="other"))
    for name in ("zed", "amy", "bob"):
        await storage.create_agent(
            Agent(world="lab", name=name, provider="openai", model=f"m-{name}", temperature=0.5)
        )
    await storage.create_agent(Agent(world="other", name="stranger", provider="openai", model="m"))
    await storage.record_agent_step("lab", "amy", [], llm_calls=2)  # counted, and last active

    world, agents = await storage.world_and_agents("lab")

    assert world == await storage.get_world("lab")
    assert (world.turn_limit, world.main_agent, world.description, world.hooks) == (7, "zed", "a lab", ["m:f"])
    assert [a.name for a in agents] == ["zed", "amy", "bob"]
    assert agents == [await storage.get_agent("lab", name) for name in ("zed", "amy", "bob")]
    assert {a.model for a in agents} == {"m-zed", "m-amy", "m-bob"} and all(a.world == "lab" for a in agents)
    assert [a.llm_call_count for a in agents] == [0, 2, 0] and agents[1].last_active is not None


async def test_a_world_with_no_agents_and_a_world_that_is_not_there(storage: SQLStorage) -> None:
    await storage.create_world(World(name="empty", turn_limit=3))

    world, agents = await storage.world_and_agents("empty")

    assert world == await storage.get_world("empty") and world.turn_limit == 3
    assert agents == []
    with pytest.raises(NotFoundError, match="world 'nowhere' not found"):
        await storage.world_and_agents("nowhere")


async def test_a_post_into_a_chat_that_is_not_there_stores_nothing(storage: SQLStorage) -> None:
    """The post's insert is its own check that the chat exists (``queries.insert_into_chat``):
    refused, it leaves no message, no event, no claim and no work behind."""
    await storage.create_world(World(name="lab"))
    await storage.create_agent(Agent(world="lab", name="a1", provider="openai", model="m"))
    await storage.create_chat(Chat(world="lab", chat_id="real"))
    lost = Message(chat_id="ghost", role="user", sender="human", content="@a1 anyone?")

    with pytest.raises(NotFoundError, match="chat 'ghost' not found in world 'lab'"):
        await storage.post_to_chat(
            "lab", lost,
            inbox=InboxChange("ghost", append=(Route(message=lost),)), claim_for="me", claim_ttl=20.0,
        )  # fmt: skip

    assert await storage.transcript("lab", "ghost") == []
    assert await EventLog(storage).head("lab") == 0
    assert await storage.leases.holder("lab", "ghost") is None
    assert await storage.inbox.items("lab", "ghost") == []
    # the chat that is there takes the post, and reports the position just before it
    before = await storage.last_seq()
    kept = Message(chat_id="real", role="user", sender="human", content="@a1 hello")
    posted = await storage.post_to_chat("lab", kept)
    assert [m.content for m in await storage.transcript("lab", "real")] == ["@a1 hello"]
    assert posted.after_seq == before
    assert [m.content for m in (await storage.since_with_waiting("lab", "real", before))[0]] == [
        "@a1 hello"
    ]
    assert (await EventLog(storage).after("lab", 0)).events != []
