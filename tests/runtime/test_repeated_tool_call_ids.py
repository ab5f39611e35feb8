"""A model that repeats a tool-call id never breaks the turn (SPEC O2, O3, A3, T4).

A waiting call or approval is keyed on its id across the world, and every result answers the
call with the same id. A repeated id used to fail the insert with a raw ``IntegrityError``
(SQL text in the error, the turn lost). Now the repeated id is renamed before the call is
stored: each call keeps one unique id, gets its own result, and the other calls and
approvals carry on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentworld.agent_world import AgentWorld
from agentworld.models import Message, ToolCall
from agentworld.runtime.call_ids import MAX_ID, unique_call_ids
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

CLIENT_TOOLS = [
    {
        "name": "pick_color",
        "description": "Ask the user to pick a color.",
        "parameters": {"type": "object", "properties": {"prompt": {"type": "string"}}},
    }
]


def pick(prompt: str, call_id: str) -> ToolCallSpec:
    return ToolCallSpec(name="pick_color", arguments=json.dumps({"prompt": prompt}), id=call_id)


def read(path: str, call_id: str) -> ToolCallSpec:
    return ToolCallSpec(name="read_file", arguments=json.dumps({"path": path}), id=call_id)


def shell(command: str, call_id: str) -> ToolCallSpec:
    return ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": command}), id=call_id)


class Plans:
    """Answers each user message with the next planned calls, tool results with text."""

    def __init__(self, *plans: list[ToolCallSpec]) -> None:
        self.plans = list(plans)

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
            return Reply.text("saw: " + " | ".join(results))
        return Reply.tools(*self.plans.pop(0)) if self.plans else Reply.text("nothing to do")


def assert_calls_and_results_pair(memory: list[Message]) -> list[str]:
    """Every call id is unique in the memory and answered by exactly one result."""
    calls = [c.id for m in memory for c in m.tool_calls or ()]
    results = [m.tool_call_id for m in memory if m.role == "tool"]
    assert len(calls) == len(set(calls)), calls
    assert sorted(calls) == sorted(results), (calls, results)
    return calls


def assert_model_input_pairs(request: dict[str, Any]) -> None:
    """What the provider is sent: unique ids, each call followed by its result."""
    calls = [c["id"] for m in request["messages"] for c in m.get("tool_calls") or ()]
    results = [m["tool_call_id"] for m in request["messages"] if m["role"] == "tool"]
    assert len(calls) == len(set(calls)), calls
    assert sorted(calls) == sorted(results)


async def test_two_client_calls_with_the_same_id_in_one_response_both_wait_and_resume(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", client_tools=CLIENT_TOOLS)
    script.by_agent["a1"] = Plans([pick("first", "dup"), pick("second", "dup")])

    sent = await aw.send("w", "@a1 ask me twice")

    assert sent.errors == []
    waiting = await aw.pending_calls("w")
    assert [json.loads(p.arguments)["prompt"] for p in waiting] == ["first", "second"]
    first, second = (p.tool_call_id for p in waiting)
    assert first == "dup" and second != "dup" and second.startswith("dup-")

    await aw.respond("w", first, {"color": "teal"})
    done = await aw.respond("w", second, {"color": "plum"})

    assert done.errors == []
    assert "teal" in (done.messages[-1].content or "") and "plum" in (
        done.messages[-1].content or ""
    )
    assert await aw.pending_calls("w") == []
    chat = done.chat_id
    assert assert_calls_and_results_pair(await aw.storage.memory("w", "a1", chat)) == [
        first,
        second,
    ]
    assert_model_input_pairs(server.requests[-1])


async def test_an_id_from_an_earlier_turn_is_renamed_and_the_turn_completes(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "b.txt").write_text("beta")
    await make_world("a1", working_dir=str(tmp_path))
    script.by_agent["a1"] = Plans([read("a.txt", "call_1")], [read("b.txt", "call_1")])

    await aw.send("w", "@a1 read a")
    second = await aw.send("w", "@a1 read b")

    assert second.errors == []
    assert "beta" in (second.messages[-1].content or "")
    memory = await aw.storage.memory("w", "a1", second.chat_id)
    ids = assert_calls_and_results_pair(memory)
    assert ids[0] == "call_1" and ids[1].startswith("call_1-")
    results = {m.tool_call_id: m.content for m in memory if m.role == "tool"}
    assert "alpha" in (results["call_1"] or "") and "beta" in (results[ids[1]] or "")
    assert_model_input_pairs(server.requests[-1])
    logs = await aw.tool_logs("w")
    assert sorted(entry.tool_call_id for entry in logs) == sorted(ids)


async def test_a_client_call_reusing_a_pending_approval_id_leaves_the_approval_working(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path
) -> None:
    await make_world("a1", "a2", working_dir=str(tmp_path), client_tools=CLIENT_TOOLS)
    script.by_agent["a1"] = Plans([shell("touch made.txt", "call_touch")])
    approval: dict[str, str] = {}
    script.by_agent["a2"] = lambda body: (
        Reply.text("done")
        if body["messages"][-1]["role"] == "tool"
        else Reply.tools(pick("now", approval["id"]))
    )

    await aw.send("w", "@a1 make a file")
    (pending,) = await aw.approvals("w")
    approval["id"] = pending.tool_call_id
    asked = await aw.send("w", "@a2 ask the user")

    assert asked.errors == []
    (client_call,) = await aw.pending_calls("w")
    assert client_call.tool_call_id != pending.tool_call_id
    assert client_call.tool_call_id.startswith(pending.tool_call_id + "-")
    assert [p.tool_call_id for p in await aw.approvals("w")] == [pending.tool_call_id]

    approved = await aw.approve("w", pending.tool_call_id, decision="approve")
    assert approved.errors == []
    assert (tmp_path / "made.txt").exists()
    answered = await aw.respond("w", client_call.tool_call_id, {"color": "teal"})
    assert answered.errors == []
    assert await aw.pending_calls("w") == [] and await aw.approvals("w") == []


async def test_two_risky_calls_with_one_id_get_two_approvals_answered_independently(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    await make_world("a1", working_dir=str(tmp_path))
    script.by_agent["a1"] = Plans([shell("touch one.txt", "same"), shell("touch two.txt", "same")])

    await aw.send("w", "@a1 make two files")
    first, second = await aw.approvals("w")
    originals = [p.original_call_id for p in (first, second)]
    assert originals[0] == "same" and originals[1].startswith("same-")

    await aw.approve("w", first.tool_call_id, decision="approve")
    assert (tmp_path / "one.txt").exists() and not (tmp_path / "two.txt").exists()
    calls_before = len(server.requests)
    assert [p.tool_call_id for p in await aw.approvals("w")] == [second.tool_call_id]
    assert len(server.requests) == calls_before  # the batch still waits: no early resume

    done = await aw.approve("w", second.tool_call_id, decision="deny")
    assert done.errors == []
    assert not (tmp_path / "two.txt").exists()
    assert_calls_and_results_pair(
        [m for m in await aw.storage.memory("w", "a1", done.chat_id) if not _client(m)]
    )
    assert_model_input_pairs(server.requests[-1])


def _client(message: Message) -> bool:
    """The injected approval traffic (``client.*`` calls and their answers)."""
    if message.tool_calls:
        return all(c.function.name.startswith("client.") for c in message.tool_calls)
    return message.role == "tool" and (message.tool_call_id or "").startswith("approval_")


def test_unique_call_ids_keeps_fresh_ids_and_renames_the_rest() -> None:
    calls = [
        ToolCall.of("a", "t"),
        ToolCall.of("a", "t"),
        ToolCall.of("taken", "t"),
        ToolCall.of("", "t"),
        ToolCall.of("x" * (MAX_ID + 1), "t"),
        ToolCall.of("call_gemini_ab:c/d", "t"),
        ToolCall.of("call_gemini_ab:c/d", "t"),
    ]
    ids = [c.id for c in unique_call_ids(calls, {"taken"})]
    assert ids[0] == "a" and ids[1].startswith("a-")
    assert ids[2].startswith("taken-")
    assert ids[3].startswith("call-")
    assert len(ids[4]) <= MAX_ID
    assert ids[5] == "call_gemini_ab:c/d"  # a new id keeps its exact text
    assert ids[6].startswith("call_gemini_ab_c_d-")  # a renamed one keeps its prefix, safe chars
    assert len(set(ids)) == len(ids)
    assert [c.function.name for c in unique_call_ids(calls, ())] == ["t"] * len(calls)
