"""World and agent names are one name whatever their case, on both backends, and the check is
atomic with the insert: two writers creating ``csb2`` and ``CSB2`` at once (two processes on
one database: each its own ``SQLStorage``) leave exactly one."""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path

import pytest

from agentworld.errors import AlreadyExistsError
from agentworld.models import Agent, World
from agentworld.storage.sql import SQLStorage
from agentworld.testing.postgres import create_database

_numbers = itertools.count()
ROUNDS = 8


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'names.db'}"
    server = request.getfixturevalue("postgres_server")
    return create_database(server, f"names{os.getpid()}_{next(_numbers)}")


async def test_a_world_name_taken_in_another_case_is_refused_by_the_store(db: str) -> None:
    async with SQLStorage(db) as storage:
        await storage.create_world(World(name="csb2"))

        with pytest.raises(AlreadyExistsError, match="regardless of case"):
            await storage.create_world(World(name="CSB2"))

        assert await storage.world_names() == ["csb2"]


async def test_concurrent_writers_create_one_world_and_one_agent_of_a_name_in_any_case(
    db: str,
) -> None:
    async with SQLStorage(db) as one, SQLStorage(db) as two:
        for number in range(ROUNDS):
            spellings = (f"race{number}", f"RACE{number}", f"Race{number}", f"rACE{number}")
            worlds = await asyncio.gather(
                *(store.create_world(World(name=name))
                  for store, name in zip(itertools.cycle((one, two)), spellings, strict=False)),
                return_exceptions=True,
            )
            assert sum(isinstance(w, World) for w in worlds) == 1, worlds
            assert all(isinstance(w, World | AlreadyExistsError) for w in worlds), worlds
            (world,) = (w for w in worlds if isinstance(w, World))
            agents = await asyncio.gather(
                *(store.create_agent(Agent(world=world.name, name=name, provider="openai", model="m"))
                  for store, name in zip(itertools.cycle((one, two)), ("ag", "AG", "Ag", "aG"), strict=False)),
                return_exceptions=True,
            )
            assert sum(isinstance(a, Agent) for a in agents) == 1, agents
            assert len(await one.list_agents(world.name)) == 1

        names = await one.world_names()
        assert len(names) == ROUNDS == len({name.lower() for name in names})
