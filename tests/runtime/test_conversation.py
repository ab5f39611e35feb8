"""Multi-agent conversation through the runtime: routing, auto-mention, turn limits, the loop
cap, errors, titles and memory isolation (SPEC R1–R7, O1–O6)."""

from __future__ import annotations

import asyncio
from typing import Any

from agentworld.agent_world import AgentWorld
from agentworld.models.events import SystemEvent, WorldEvent
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec


def turn_requests(server: OpenAIWireServer) -> list[dict[str, Any]]:
    """Requests made by agent turns (agents here have the system prompt ``agent:<name>``)."""
    return [r for r in server.requests if r["messages"][0]["content"].startswith("agent:")]


async def test_each_message_reaches_exactly_the_addressed_agents(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", "a2")
    cases = {
        "@a2 only you": ["a2"],
        "hello everyone": ["a1", "a2"],
        "I think @a1 is right": [],
        "Hi all\n  @a1 please answer": ["a1"],
    }
    for text, expected in cases.items():
        before = len(turn_requests(server))
        result = await aw.send("w", text)
        senders = [m.sender for m in result.messages if m.role == "assistant"]
        assert senders == expected, text
        assert len(turn_requests(server)) - before == len(expected), text
        assert result.messages[0].content == text  # stored even when nobody answers (R7)


async def test_main_agent_alone_answers_unaddressed_human_messages(
    aw: AgentWorld, make_world: Any
) -> None:
    await make_world("a1", "a2")
    await aw.update_world("w", main_agent="a2")  # once a2 exists: a new world has no agents
    result = await aw.send("w", "hello everyone")
    assert [m.sender for m in result.messages if m.role == "assistant"] == ["a2"]
    result = await aw.send("w", "@a1 you too")
    assert [m.sender for m in result.messages if m.role == "assistant"] == ["a1"]


async def test_agents_talk_until_the_turn_limit_hands_back_to_the_human(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", "a2", turn_limit=3)
    script.by_agent["a1"] = lambda body: Reply.text("@a2 what do you think?")
    script.by_agent["a2"] = lambda body: Reply.text("I think we should go on.")

    result = await aw.send("w", "@a1 start a discussion")

    spoken = [(m.sender, m.content) for m in result.messages if m.role == "assistant"]
    assert spoken[0] == ("a1", "@a2 what do you think?")
    assert spoken[1] == ("a2", "@a1 I think we should go on.")  # auto-mention (R3)
    assert spoken[-1] == (
        "a1",
        "@human Turn limit reached (3 LLM calls). Please take control of the conversation.",
    )
    assert len(spoken) == 3 + 3 + 1  # three calls each, then a1's hand-off instead of a fourth
    assert len(turn_requests(server)) == 6
    counts = {a.name: a.llm_call_count for a in await aw.list_agents("w")}
    assert counts == {"a1": 3, "a2": 3}

    # A human message gives everyone a fresh budget (R4).
    await aw.send("w", "@a2 thanks, stop now")
    assert {a.name: a.llm_call_count for a in await aw.list_agents("w")}["a1"] == 0


async def test_one_hand_back_ends_a_three_agent_loop(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", "a2", "a3", turn_limit=2)
    for name in ("a1", "a2", "a3"):  # each hands the word to the other two
        others = [o for o in ("a1", "a2", "a3") if o != name]
        script.by_agent[name] = lambda body, others=others: Reply.text(
            f"<world>TO: {', '.join(others)}</world> your turn"
        )

    result = await aw.send("w", "@a1 start")

    spoken = [(m.sender, m.content or "") for m in result.messages if m.role == "assistant"]
    hand_backs = [s for s in spoken if "Turn limit reached" in s[1]]
    assert len(hand_backs) == 1  # control went back to the people once...
    assert spoken[-1] == hand_backs[0]  # ...and nobody spoke after it
    assert len(turn_requests(server)) <= 2 * 3

    # The people speak: the agents talk again, with fresh budgets.
    again = await aw.send("w", "@a2 one more round")
    assert [m.sender for m in again.messages if m.role == "assistant"][0] == "a2"


async def test_the_turn_limit_stops_a_tool_loop_too(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", turn_limit=2, max_iterations=10)
    script.by_agent["a1"] = lambda body: Reply.tools(ToolCallSpec(name="lookup", arguments='{"q": 1}'))

    result = await aw.send("w", "@a1 look it up, forever")

    assert len(turn_requests(server)) == 2  # every LLM call counts (R4), a tool loop's too
    assert result.messages[-1].sender == "a1"
    assert "Turn limit reached (2 LLM calls)" in (result.messages[-1].content or "")


async def test_a_model_calling_tools_forever_stops_at_the_iteration_cap(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1", max_iterations=4)
    script.by_agent["a1"] = lambda body: Reply.tools(ToolCallSpec(name="lookup", arguments='{"q": 1}'))
    runtime = await aw.runtime("w")
    events: list[WorldEvent] = []
    runtime.bus.subscribe(events.append, kinds=["system"])

    result = await aw.send("w", "@a1 look it up")

    calls = [m for m in result.messages if m.role == "assistant" and m.tool_calls]
    results = [m for m in result.messages if m.role == "tool"]
    assert len(calls) == len(results) == 4
    assert all('"error"' in (m.content or "") and "lookup" in (m.content or "") for m in results)
    assert result.messages[-1].role == "system"
    assert "4 LLM iterations" in (result.messages[-1].content or "")
    assert any(isinstance(e, SystemEvent) and e.context.get("reason") == "iteration_cap" for e in events)
    assert result.errors and "iteration" in result.errors[0]


async def test_a_failing_agent_is_reported_and_the_others_still_answer(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1", "a2")
    script.by_agent["a1"] = lambda body: Reply.error(400, "context window exceeded")

    result = await aw.send("w", "hello everyone")

    by_role = [(m.role, m.sender) for m in result.messages]
    assert ("assistant", "a2") in by_role
    errors = [m for m in result.messages if m.role == "system"]
    assert len(errors) == 1 and "a1" in (errors[0].content or "")
    assert "context window exceeded" in (errors[0].content or "")
    assert len(result.errors) == 1


async def test_each_agent_sees_only_its_own_memory_of_the_current_chat(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", "a2")
    first = (await aw.new_chat("w")).chat_id
    await aw.send("w", "@a1 secret for chat one", chat_id=first)
    await aw.send("w", "@a2 only for a2", chat_id=first)
    second = (await aw.new_chat("w")).chat_id
    server.clear()

    await aw.send("w", "@a1 fresh start", chat_id=second)

    (request,) = [r for r in server.requests if r["messages"][0]["content"] == "agent:a1"]
    assert request["messages"] == [
        {"role": "system", "content": "agent:a1"},
        {"role": "user", "content": "@a1 fresh start"},
    ]


async def test_other_agents_are_labelled_in_the_llm_input(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", "a2")
    script.by_agent["a1"] = lambda body: Reply.text("@a2 please check the numbers")
    script.by_agent["a2"] = lambda body: Reply.text("<world>DONE</world> checked")
    await aw.send("w", "@a1 go")
    (a2_request,) = [r for r in server.requests if r["messages"][0]["content"] == "agent:a2"]
    assert a2_request["messages"][-1] == {"role": "user", "content": "[a1]: @a2 please check the numbers"}


async def test_chat_gets_a_title_after_its_first_exchange(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1")
    script.title = "Shipping the release"
    result = await aw.send("w", "@a1 how do we ship?")
    (chat,) = await aw.list_chats("w")
    assert (chat.chat_id, chat.name) == (result.chat_id, "Shipping the release")
    script.title = "Another title"
    await aw.send("w", "@a1 and then?")
    assert (await aw.list_chats("w"))[0].name == "Shipping the release"  # named once


async def test_title_falls_back_to_the_question_when_the_model_cannot_name_it(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1")
    script.title = None  # the title request fails with 503
    await aw.send("w", "@a1 please plan the quarterly offsite for the team")
    assert (await aw.list_chats("w"))[0].name == "please plan the quarterly offsite for"


async def test_many_chats_run_concurrently_in_order_without_losses(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", "a2", "a3")
    runtime = await aw.runtime("w")
    chats = [(await runtime.new_chat()).chat_id for _ in range(100)]

    for chat in chats:
        await runtime.send(chat, "first, everyone")
        await runtime.send(chat, "second, everyone")
    await asyncio.wait_for(runtime.wait_until_idle(), timeout=300)

    for chat in chats:
        transcript = await aw.storage.transcript("w", chat)
        humans = [m for m in transcript if m.sender == "human"]
        answers = [m for m in transcript if m.role == "assistant"]
        assert [m.content for m in humans] == ["first, everyone", "second, everyone"]
        replied = [(m.reply_to_message_id, m.sender) for m in answers]
        expected = [(h.message_id, a) for h in humans for a in ("a1", "a2", "a3")]
        assert replied == expected, chat  # every agent, every message, in order, once
        assert all(m.content == f"{m.sender} heard: {h}" for m, h in zip(
            answers, [h.content for h in humans for _ in range(3)], strict=True
        ))
