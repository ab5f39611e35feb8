"""Fixtures for runtime tests: an ``AgentWorld`` over a real SQLite file whose agents talk to the
shared loopback ``server`` (see tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer


@pytest.fixture
async def aw(db_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[AgentWorld]:
    monkeypatch.setenv("AGENTWORLD_LLM_RETRIES", "1")
    async with AgentWorld(db_url) as world:
        yield world


@pytest.fixture
def make_world(aw: AgentWorld, server: OpenAIWireServer) -> Callable[..., Any]:
    async def make(*agents: str, name: str = "w", **settings: Any) -> str:
        settings.setdefault("streaming", False)
        await aw.create_world(name, **settings)
        for agent in agents:
            await aw.create_agent(
                name, agent, provider="openai", model="m", base_url=server.base_url,
                system_prompt=f"agent:{agent}",
            )
        return name

    return make
