"""An agent's memory window: the model is shown the latest messages of the chat, from a user
message on, and a fresh process reads only those (issue 18: cold history); all stay stored."""

from __future__ import annotations

import json
from typing import Any

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer


def last_prompt(server: OpenAIWireServer) -> list[dict[str, Any]]:
    turns = [r for r in server.requests if r["messages"][0]["content"].startswith("agent:")]
    return list(turns[-1]["messages"])


async def test_the_model_is_shown_the_window_and_a_fresh_process_reads_only_it(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer, db_url: str
) -> None:
    await make_world("a1")
    await aw.update_agent("w", "a1", memory_window=20)
    for i in range(15):  # 30 messages in a1's memory
        await aw.send("w", f"@a1 question {i}")

    prompt = last_prompt(server)
    assert prompt[0]["role"] == "system"
    assert [m["role"] for m in prompt[1:3]] == ["user", "assistant"]
    assert len(prompt) - 1 <= 20
    assert "question 14" in prompt[-1]["content"]
    assert "question 0" not in json.dumps(prompt)

    async with AgentWorld(db_url) as fresh:  # nothing cached: the tail is read from storage
        await fresh.send("w", "@a1 from a fresh process")
    cold = last_prompt(server)
    assert cold[1:-2] == prompt[3:]  # the window slid by one exchange
    assert cold[-2]["role"] == "assistant" and "question 14" in cold[-2]["content"]
    assert "from a fresh process" in cold[-1]["content"]
    assert len(await aw.agent_memory("w", "a1")) == 32  # every message is still stored

    await aw.update_agent("w", "a1", memory_window=0)
    await aw.send("w", "@a1 now everything")
    shown = last_prompt(server)
    assert len(shown) == 1 + 33
    assert "question 0" in json.dumps(shown)
