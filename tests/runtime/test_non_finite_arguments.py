"""A ``NaN`` or ``Infinity`` in a model's tool arguments is refused where the arguments are
read (SPEC O2): the model gets an error result it reads on the next iteration, and nothing
that holds the value is stored -- no pending approval, no audit entry, no tool log, no event.
Python's ``json`` reads these words (and turns ``1e400`` into ``inf``); JSON does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e400", "-1e999"]


def strict(text: str) -> Any:
    """``text`` parsed as JSON proper: a ``NaN`` or an overflowing number fails the test."""

    def refuse(word: str) -> Any:
        raise AssertionError(f"{word} in {text!r}")

    def finite(number: str) -> float:
        value = float(number)
        assert value - value == 0, f"{number} in {text!r}"
        return value

    return json.loads(text, parse_constant=refuse, parse_float=finite)


@pytest.mark.parametrize("number", NON_FINITE)
@pytest.mark.parametrize("tool", ["shell_cmd", "read_file"])
async def test_a_non_finite_number_in_tool_arguments_is_an_error_result_and_never_stored(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path,
    number: str, tool: str,
) -> None:
    (tmp_path / "notes.txt").write_text("notes")
    await make_world("a1", working_dir=str(tmp_path))
    # shell_cmd asks a person by default (the approval would hold the value); read_file runs
    # at once (its tool log and events would).
    arguments = (
        f'{{"command": "echo hi", "timeout": {number}}}'
        if tool == "shell_cmd"
        else f'{{"path": "notes.txt", "x": [{number}]}}'
    )

    def respond(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text("the tool said: " + last["content"])
        return Reply.tools(ToolCallSpec(name=tool, arguments=arguments, id="call_nan"))

    script.by_agent["a1"] = respond

    result = await aw.send("w", "@a1 go")

    assert result.pending_approvals == []
    (refusal,) = [m for m in result.messages if m.role == "tool"]
    error = strict(refusal.content or "")["error"]
    assert "not valid JSON" in error and number.lstrip("-") in error, error
    # The model read the refusal on its next call, and the loop ended with its answer.
    asked = [r for r in server.requests if r["messages"][0]["content"] == "agent:a1"]
    assert len(asked) == 2
    assert asked[1]["messages"][-1] == {
        "role": "tool", "tool_call_id": "call_nan", "content": refusal.content,
    }
    assert result.messages[-1].content == "the tool said: " + (refusal.content or "")
    assert await aw.approvals("w") == []
    assert await aw.audit_log("w") == []
    assert await aw.tool_logs("w") == []
    events = [e for e in await aw.storage.list_events("w") if e["kind"] in ("tool", "approval")]
    assert [(e["kind"], e["phase"]) for e in events] == [("tool", "error")]  # nothing started
    assert "arguments" not in events[0] and "arguments" not in events[0]["detail"]


async def test_a_scripted_model_file_holding_nan_gets_the_refusal_through_the_cli(
    cli: Any, tmp_path: Path
) -> None:
    # Python's json reads the script file, NaN and all: the scripted model sends it as written.
    script = tmp_path / "script.json"
    script.write_text(
        '[{"tool_calls": [{"name": "shell_cmd", "arguments": {"command": "echo hi", "timeout": NaN}}]},'
        ' "I read the refusal"]'
    )
    cli("world", "create", "w", "--working-dir", str(tmp_path))
    cli("agent", "create", "w", "a1", "--provider", "scripted", "--model", f"file:{script}")

    sent = strict(cli("send", "w", "@a1 go", "--json").stdout)

    assert sent["pendingApprovals"] == []
    (refusal,) = [m for m in sent["messages"] if m["role"] == "tool"]
    assert "NaN is not a JSON number" in strict(refusal["content"])["error"]
    assert sent["messages"][-1]["content"] == "I read the refusal"
    for command, key in (("approvals", "approvals"), ("audit", "audit"), ("tool-logs", "toolLogs")):
        assert strict(cli(command, "w", "--json").stdout) == {key: []}, command
