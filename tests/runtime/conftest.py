"""Fixtures for runtime tests: an ``AgentWorld`` over a real SQLite file, agents on a loopback
OpenAI-compatible server whose answers depend on which agent asks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.runtime.titles import TITLE_INSTRUCTION
from agentworld.testing.openai_wire import OpenAIWireServer, Reply

AgentReplies = dict[str, Callable[[dict[str, Any]], Reply]]


def asking_agent(body: dict[str, Any]) -> str | None:
    """Agents here have the system prompt ``agent:<name>``; title requests have none."""
    first = body["messages"][0]
    if first["role"] == "system" and first["content"].startswith("agent:"):
        return str(first["content"].removeprefix("agent:"))
    return None


def is_title_request(body: dict[str, Any]) -> bool:
    first = body["messages"][0]
    return first["role"] == "system" and first["content"] == TITLE_INSTRUCTION


def last_content(body: dict[str, Any]) -> str:
    return str(body["messages"][-1].get("content") or "")


class Scripted:
    """Route the server's replies by asking agent; the default echoes the last message."""

    def __init__(self) -> None:
        self.by_agent: AgentReplies = {}
        self.title: str | None = "A generated title"
        """None makes title requests fail, to exercise the fallback."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        if is_title_request(body):
            return Reply.text(self.title) if self.title is not None else Reply.error(503, "busy")
        agent = asking_agent(body)
        if agent in self.by_agent:
            return self.by_agent[agent](body)
        return Reply.text(f"{agent} heard: {last_content(body)}")


@pytest.fixture
def script() -> Scripted:
    return Scripted()


@pytest.fixture
def server(script: Scripted) -> Any:
    with OpenAIWireServer(responder=script) as running:
        yield running


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
