"""Deleting an agent inside one running process (SPEC A3, A5): its approvals are refused, and
a new agent of the same name is asked with an empty memory, even though the process had the
old memory cached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.errors import InvalidInputError
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec


def asks_to_touch(body: dict[str, Any]) -> Reply:
    if body["messages"][-1]["role"] == "tool":
        return Reply.text("done")
    return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": "touch x"})))


async def test_a_deleted_agents_approval_is_refused_and_its_namesake_starts_empty(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    await make_world("a1", working_dir=str(tmp_path))
    script.by_agent["a1"] = asks_to_touch
    await aw.send("w", "@a1 remember the word pelican and touch x")
    (pending,) = await aw.approvals("w")

    await aw.delete_agent("w", "A1")  # any case, like mentions

    with pytest.raises(InvalidInputError, match="no longer pending: agent 'a1' was deleted"):
        await aw.approve("w", pending.tool_call_id, decision="approve")
    assert not (tmp_path / "x").exists()
    assert await aw.approvals("w") == []

    await aw.create_agent(
        "w", "a1", provider="openai", model="m", base_url=server.base_url, system_prompt="agent:a1"
    )
    script.by_agent["a1"] = lambda body: Reply.text("hello")
    await aw.send("w", "@a1 hi")
    asked = [r for r in server.requests if r["messages"][0]["content"] == "agent:a1"][-1]
    assert "pelican" not in json.dumps(asked)
    assert [m["role"] for m in asked["messages"]] == ["system", "user"]
