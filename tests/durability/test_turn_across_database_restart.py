"""A turn outlives a PostgreSQL restart: the database going away while the model answers
costs no answer. The item stays in the chat's inbox and is taken on again once the server is
back (the model is asked again; its first answer was never stored), and the message is
answered exactly once, with no failed-turn line.

Real parts: a PostgreSQL cluster of this test's own, stopped and started with ``pg_ctl``, and
a loopback server speaking OpenAI's wire format through the official SDK.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from agentworld.testing.postgres import restartable_cluster

pytestmark = pytest.mark.sqlite_only  # the test makes its own PostgreSQL server


async def test_a_database_restart_mid_turn_loses_no_answer(tmp_path: Path) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        if body["messages"][0]["content"] != "agent:a1":
            return Reply.text("A title")
        return Reply.text("the answer", delay=2.0)

    with restartable_cluster() as cluster, OpenAIWireServer(responder=respond) as server:
        async with AgentWorld(cluster.url) as aw:
            await aw.create_world("w", working_dir=str(tmp_path), streaming=False)
            await aw.create_agent(
                "w", "a1", provider="openai", model="m", base_url=server.base_url,
                system_prompt="agent:a1",
            )
            chat = (await aw.new_chat("w")).chat_id
            sent = asyncio.create_task(aw.send("w", "@a1 hello", chat_id=chat, timeout=90))
            for _ in range(600):
                if any(r["messages"][0]["content"] == "agent:a1" for r in server.requests):
                    break
                await asyncio.sleep(0.05)
            await asyncio.to_thread(cluster.stop)  # the model is answering now
            await asyncio.sleep(3.0)  # its answer comes back to a database that is gone
            await asyncio.to_thread(cluster.start)
            result = await sent
            stored = await aw.transcript("w", chat)

    answers = [m for m in stored if m.sender == "a1"]
    assert [m.content for m in answers] == ["the answer"], [m.content for m in stored]
    assert result.errors == []
    assert not any(m.role == "system" for m in stored), [m.content for m in stored]
    asked = [r for r in server.requests if r["messages"][0]["content"] == "agent:a1"]
    assert len(asked) >= 2  # asked again: the first answer was never stored
