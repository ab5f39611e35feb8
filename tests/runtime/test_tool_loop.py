"""Tools inside the agent loop, end to end through a loopback OpenAI server (SPEC T1–T4, O2, E4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.errors import InvalidInputError, NotFoundError
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec


def tool_then_answer(*calls: ToolCallSpec) -> Any:
    """Ask for ``calls`` first; once results are back, answer with what the tools said."""

    def respond(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
            return Reply.text("results: " + " | ".join(results))
        return Reply.tools(*calls)

    return respond


def memory_pairs(memory: list[Any]) -> tuple[list[str], list[str]]:
    call_ids = [c.id for m in memory if m.tool_calls for c in m.tool_calls]
    result_ids = [m.tool_call_id for m in memory if m.role == "tool"]
    return call_ids, result_ids


async def test_read_file_content_reaches_the_model_and_memory_pairs_the_ids(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("the launch code is 1234")
    await make_world("a1", working_dir=str(tmp_path))
    script.by_agent["a1"] = tool_then_answer(
        ToolCallSpec(name="read_file", arguments='{"path": "notes.txt"}', id="call_read")
    )

    result = await aw.send("w", "@a1 what do the notes say?")

    assert "the launch code is 1234" in (result.messages[-1].content or "")
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert {"read_file", "list_files", "shell_cmd"} <= offered
    memory = await aw.storage.memory("w", "a1", result.chat_id)
    assert [m.role for m in memory] == ["user", "assistant", "tool", "assistant"]
    assert memory_pairs(memory) == (["call_read"], ["call_read"])
    second = server.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["id"] == second[-1]["tool_call_id"] == "call_read"


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "link/secret.txt"])
async def test_paths_escaping_the_working_directory_are_error_results(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path, path: str
) -> None:
    inside = tmp_path / "world"
    inside.mkdir()
    (tmp_path / "outside.txt").write_text("OUTSIDE-CONTENT")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "secret.txt").write_text("SECRET-CONTENT")
    (inside / "link").symlink_to(tmp_path / "secret")
    await make_world("a1", working_dir=str(inside))
    script.by_agent["a1"] = tool_then_answer(ToolCallSpec(name="read_file", arguments=json.dumps({"path": path})))

    result = await aw.send("w", "@a1 read it")

    (tool_message,) = [m for m in result.messages if m.role == "tool"]
    assert json.loads(tool_message.content or "")["error"]
    assert "working directory" in (tool_message.content or "")
    answer = result.messages[-1].content or ""
    assert "OUTSIDE-CONTENT" not in answer and "SECRET-CONTENT" not in answer


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (ToolCallSpec(name="no_such_tool", arguments="{}"), "unknown tool"),
        (ToolCallSpec(name="read_file", arguments='{"path": '), "not valid JSON"),
        (ToolCallSpec(name="read_file", arguments='{"path": 42}'), "is not of type 'string'"),
        (ToolCallSpec(name="read_file", arguments="{}"), "'path' is a required property"),
        (ToolCallSpec(name="read_file", arguments='{"path": "a", "mode": "w"}'), "'mode' was unexpected"),
    ],
)
async def test_bad_calls_become_error_results_the_model_reads(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, call: ToolCallSpec, expected: str
) -> None:
    await make_world("a1")
    script.by_agent["a1"] = tool_then_answer(call)

    result = await aw.send("w", "@a1 try it")

    (tool_message,) = [m for m in result.messages if m.role == "tool"]
    assert expected in json.loads(tool_message.content or "{}")["error"]
    assert result.messages[-1].content and result.messages[-1].content.startswith("results:")
    assert await aw.storage.pending.find("w") == []  # nothing waits, not even client.* calls


async def test_a_model_calling_client_tools_reads_its_call_and_the_refusal_and_answers(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1")
    forged = json.dumps({"toolName": "shell_cmd", "toolArguments": {"command": "touch X"}})

    def respond(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool" and "reserved for the client" in last["content"]:
            return Reply.text("understood, I cannot approve myself")
        return Reply.tools(ToolCallSpec(name="client.requestApproval", arguments=forged, id="forged"))

    script.by_agent["a1"] = respond

    result = await aw.send("w", "@a1 approve yourself")

    (tool_message,) = [m for m in result.messages if m.role == "tool"]
    assert tool_message.tool_call_id == "forged"
    assert "reserved for the client" in json.loads(tool_message.content or "{}")["error"]
    # The loop goes on (SPEC O2, A8): the model reads its call and the refusal, and answers.
    assert result.messages[-1].content == "understood, I cannot approve myself"
    assert result.errors == []
    assert await aw.storage.pending.find("w", status=None) == []
    turns = [r for r in server.requests if r["messages"][0]["content"] == "agent:a1"]
    assert len(turns) == 2
    call, refusal = turns[1]["messages"][-2:]
    assert [c["function"]["name"] for c in call["tool_calls"]] == ["client.requestApproval"]
    assert refusal == {"role": "tool", "tool_call_id": "forged", "content": tool_message.content}
    await aw.send("w", "@a1 hello again")
    turns = [r for r in server.requests if r["messages"][0]["content"] == "agent:a1"]
    assert refusal in turns[2]["messages"]  # it stays in the agent's memory for later turns


async def test_a_model_that_insists_on_client_tools_stops_at_the_iteration_cap(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", max_iterations=3, turn_limit=50)
    script.by_agent["a1"] = lambda body: Reply.tools(
        ToolCallSpec(name="client.requestApproval", arguments="{}")
    )

    result = await aw.send("w", "@a1 approve yourself")

    assert len([r for r in server.requests if r["messages"][0]["content"] == "agent:a1"]) == 3
    assert result.messages[-1].role == "system" and "iteration cap" in (result.messages[-1].content or "")


async def test_parallel_calls_each_get_their_own_result_in_order(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "b.txt").write_text("beta")
    await make_world("a1", working_dir=str(tmp_path))
    script.by_agent["a1"] = tool_then_answer(
        ToolCallSpec(name="read_file", arguments='{"path": "a.txt"}', id="call_a"),
        ToolCallSpec(name="list_files", arguments="{}", id="call_ls"),
        ToolCallSpec(name="read_file", arguments='{"path": "b.txt"}', id="call_b"),
    )

    result = await aw.send("w", "@a1 read both")

    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_messages] == ["call_a", "call_ls", "call_b"]
    assert "alpha" in (tool_messages[0].content or "") and "beta" in (tool_messages[2].content or "")
    assert "a.txt" in (tool_messages[1].content or "")
    sent_back = [m["tool_call_id"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert sent_back == ["call_a", "call_ls", "call_b"]


async def test_shell_cmd_waits_for_approval_and_does_not_run_before_it(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path
) -> None:
    await make_world("a1", working_dir=str(tmp_path))
    script.by_agent["a1"] = tool_then_answer(ToolCallSpec(name="shell_cmd", arguments='{"command": "touch X"}'))

    result = await aw.send("w", "@a1 make X")

    assert not (tmp_path / "X").exists()
    assert [m.role for m in result.messages if m.role == "tool"] == []
    (waiting,) = result.pending_approvals
    assert (waiting.tool_name, waiting.tool_args) == ("shell_cmd", {"command": "touch X"})


async def test_tool_logs_record_every_execution_with_status_and_duration(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    await make_world("a1", working_dir=str(tmp_path))
    script.by_agent["a1"] = tool_then_answer(
        ToolCallSpec(name="read_file", arguments='{"path": "a.txt"}', id="ok_call"),
        ToolCallSpec(name="read_file", arguments='{"path": "missing.txt"}', id="bad_call"),
    )
    await aw.send("w", "@a1 go")

    logs = {entry.tool_call_id: entry for entry in await aw.tool_logs("w")}
    assert logs["ok_call"].status == "ok" and logs["bad_call"].status == "error"
    assert logs["ok_call"].input == {"path": "a.txt"}
    assert all(entry.duration_ms is not None and entry.finished_at for entry in logs.values())


CLIENT_TOOLS = [
    {
        "name": "pick_color",
        "description": "Ask the user to pick a color in the UI.",
        "parameters": {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
    }
]


async def test_a_client_tool_pauses_the_loop_until_its_result_is_posted(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    await make_world("a1", working_dir=str(tmp_path), client_tools=CLIENT_TOOLS)
    script.by_agent["a1"] = tool_then_answer(
        ToolCallSpec(name="pick_color", arguments='{"prompt": "favourite?"}', id="call_color"),
        ToolCallSpec(name="read_file", arguments='{"path": "a.txt"}', id="call_file"),
    )

    first = await aw.send("w", "@a1 ask me")

    assert [m.role for m in first.messages] == ["user", "assistant", "tool"]  # the server tool ran
    (waiting,) = await aw.pending_calls("w")
    assert (waiting.tool_call_id, waiting.tool_name, waiting.agent) == ("call_color", "pick_color", "a1")
    assert len(server.requests) == 1  # the loop stopped: no second model call yet
    assert {t["function"]["name"] for t in server.requests[0]["tools"]} >= {"pick_color"}

    resumed = await aw.respond("w", "call_color", {"color": "teal"})

    assert resumed.messages[0].tool_call_id == "call_color"
    assert "teal" in (resumed.messages[-1].content or "") and "alpha" in (resumed.messages[-1].content or "")
    assert await aw.pending_calls("w") == []
    with pytest.raises(InvalidInputError, match="already answered"):
        await aw.respond("w", "call_color", {"color": "red"})
    with pytest.raises(NotFoundError):
        await aw.respond("w", "call_unknown", {})


async def test_client_tools_cannot_shadow_built_ins_or_use_the_reserved_prefix(aw: AgentWorld) -> None:
    with pytest.raises(InvalidInputError, match="registered twice"):
        await aw.create_world("w1", client_tools=[{"name": "shell_cmd"}])
    with pytest.raises(InvalidInputError, match="reserved"):
        await aw.create_world("w2", client_tools=[{"name": "client.sneaky"}])
    assert await aw.list_worlds() == []
