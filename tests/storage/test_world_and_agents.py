"""``SQLStorage.world_and_agents``: a world's settings and its agents in one statement (every
post reads them), on both backends. It must read exactly what the two separate reads did:
the settings as stored, every agent of that world and no other, in creation order, and a
world with no agents is still a world."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentworld.errors import NotFoundError
from agentworld.models import Agent, World
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
