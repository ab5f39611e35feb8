"""Each model call's cost is recorded with its message, and a chat's budget stops the agents
before the call that would exceed it, handing the conversation back (SPEC O2). Through the
loopback OpenAI server and the official SDK, with fixed token counts in its replies."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import asking_agent

from agentworld.agent_world import AgentWorld
from agentworld.models.events import SSEEvent
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_backends

LISTING = ToolCallSpec(name="list_files", arguments='{"path": "."}')


def calls_of(server: OpenAIWireServer, agent: str) -> int:
    """Model requests the server received from ``agent`` (title requests are not its)."""
    return sum(1 for body in server.requests if asking_agent(body) == agent)


async def priced_world(aw: AgentWorld, server: OpenAIWireServer, tmp_path: Any, **settings: Any) -> None:
    await aw.create_world("w", streaming=False, working_dir=str(tmp_path), **settings)
    await aw.create_agent(
        "w", "a1", provider="openai", model="gpt-4o", base_url=server.base_url, system_prompt="agent:a1"
    )


async def test_a_calls_cost_is_recorded_at_the_tables_price_and_summed_by_agent_chat_and_model(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, tmp_path: Any
) -> None:
    await priced_world(aw, server, tmp_path)
    await aw.create_agent("w", "a2", provider="openai", model="local-llama", base_url=server.base_url, system_prompt="agent:a2")
    script.by_agent["a1"] = lambda body: Reply.text(
        "@a2 done" if calls_of(server, "a1") == 1 else "@human finished", prompt_tokens=1000, completion_tokens=500
    )
    script.by_agent["a2"] = lambda body: Reply.text("ok", prompt_tokens=70, completion_tokens=30)

    result = await aw.send("w", "@a1 go")

    # gpt-4o: $2.50 in, $10.00 out per million tokens: 0.0025 + 0.005 a call, a1 made two.
    groups = await aw.usage_groups("w")
    by_agent = {g.agent: g for g in groups}
    assert by_agent["a1"].model == "gpt-4o"
    assert (by_agent["a1"].calls, by_agent["a1"].cost_usd, by_agent["a1"].unpriced_calls) == (2, 0.015, 0)
    assert (by_agent["a2"].input_tokens, by_agent["a2"].cost_usd, by_agent["a2"].unpriced_calls) == (70, None, 1)
    assert {g.chat_id for g in groups} == {result.chat_id}


async def test_an_agents_own_prices_replace_the_tables(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, tmp_path: Any
) -> None:
    await priced_world(aw, server, tmp_path)
    await aw.update_agent("w", "a1", price_in=1.0, price_out=3.0)
    script.by_agent["a1"] = lambda body: Reply.text("hi", prompt_tokens=2000, completion_tokens=1000)

    await aw.send("w", "@a1 hello")

    (group,) = await aw.usage_groups("w")
    assert group.cost_usd == 0.005  # 2000 × $1 + 1000 × $3, per million


async def test_the_end_event_of_a_streamed_call_carries_its_cost(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, tmp_path: Any
) -> None:
    await priced_world(aw, server, tmp_path)
    await aw.update_world("w", streaming=True)
    script.by_agent["a1"] = lambda body: Reply.text("hi", prompt_tokens=1000, completion_tokens=100)
    seen: list[Any] = []
    runtime = await aw.runtime("w")
    runtime.bus.subscribe(seen.append, kinds=["sse"])

    await aw.send("w", "@a1 hello")

    ends = [e for e in seen if isinstance(e, SSEEvent) and e.phase == "end"]
    assert [e.cost_usd for e in ends] == [0.0035]
    assert ends[0].model_dump(mode="json", by_alias=True)["costUsd"] == 0.0035


async def test_a_world_budget_stops_a_tool_loop_before_the_call_that_would_pass_it(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, tmp_path: Any
) -> None:
    """Each call costs $0.004 (1000 in, 150 out at gpt-4o's prices): after the third the chat
    has cost $0.012 of its $0.01, so the fourth is never made; a person speaking again does
    not make the budget fresh."""
    await priced_world(aw, server, tmp_path, budget=0.01)
    script.by_agent["a1"] = lambda body: Reply.tools(LISTING, prompt_tokens=1000, completion_tokens=150)

    result = await aw.send("w", "@a1 list the files forever")

    assert calls_of(server, "a1") == 3
    notice = result.messages[-1]
    assert (notice.sender, notice.content) == (
        "a1",
        "@human Budget reached ($0.012 of $0.01). Please take control of the conversation.",
    )
    again = await aw.send("w", "@a1 try once more", chat_id=result.chat_id)
    assert calls_of(server, "a1") == 3
    assert "Budget reached ($0.012 of $0.01)" in (again.messages[-1].content or "")


async def test_an_agent_budget_stops_that_agent_and_hands_back(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, tmp_path: Any
) -> None:
    await priced_world(aw, server, tmp_path)
    await aw.update_agent("w", "a1", budget=0.005)
    script.by_agent["a1"] = lambda body: Reply.tools(LISTING, prompt_tokens=1000, completion_tokens=150)

    result = await aw.send("w", "@a1 list the files forever")

    assert calls_of(server, "a1") == 2
    assert result.messages[-1].content == (
        "@human Budget reached ($0.008 of $0.005). Please take control of the conversation."
    )


async def test_the_hand_back_ends_the_agents_conversation(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, tmp_path: Any
) -> None:
    """a1 spends the budget answering, and a2, addressed by a1, hands back rather than call; the
    notice mentions @human, and no agent answers it."""
    await priced_world(aw, server, tmp_path, budget=0.001)
    await aw.create_agent("w", "a2", provider="openai", model="gpt-4o", base_url=server.base_url, system_prompt="agent:a2")
    script.by_agent["a1"] = lambda body: Reply.text("@a2 your turn", prompt_tokens=1000, completion_tokens=100)

    result = await aw.send("w", "@a1 start")

    assert (calls_of(server, "a1"), calls_of(server, "a2")) == (1, 0)
    assert [m.sender for m in result.messages] == ["human", "a1", "a2"]
    assert "Budget reached ($0.0035 of $0.001)" in (result.messages[-1].content or "")
