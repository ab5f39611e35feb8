"""The human approval flow through the runtime (SPEC A1–A10), against a loopback model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.errors import InvalidInputError, NotFoundError
from agentworld.models.events import ApprovalEvent, ToolEvent, WorldEvent
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec


def shell(command: str, call_id: str | None = None) -> ToolCallSpec:
    return ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": command}), id=call_id)


class Model:
    """Answers a user message with the next scripted tool calls; answers tool results in text."""

    def __init__(self) -> None:
        self.plans: list[list[ToolCallSpec]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
            return Reply.text("saw: " + results[-1])
        return Reply.tools(*self.plans.pop(0)) if self.plans else Reply.text("nothing to do")


@pytest.fixture
def model(script: Any) -> Model:
    planned = Model()
    script.by_agent["a1"] = planned
    return planned


@pytest.fixture
async def world(make_world: Any, tmp_path: Path) -> Path:
    await make_world("a1", working_dir=str(tmp_path))
    return tmp_path


def turns(server: OpenAIWireServer) -> list[dict[str, Any]]:
    """Model calls made by agent turns (title requests left out)."""
    return [r for r in server.requests if r["messages"][0]["content"] == "agent:a1"]


def no_client_traffic(server: OpenAIWireServer) -> None:
    assert "client." not in json.dumps(server.requests)  # SPEC A8


async def test_a_risky_call_waits_for_approval_and_is_recorded_as_data(
    aw: AgentWorld, world: Path, model: Model, server: OpenAIWireServer
) -> None:
    model.plans.append([shell("touch X", "call_touch")])
    runtime = await aw.runtime("w")
    events: list[WorldEvent] = []
    runtime.bus.subscribe(events.append, kinds=["approval"])

    result = await aw.send("w", "@a1 make X")

    assert not (world / "X").exists()
    (pending,) = result.pending_approvals
    assert (pending.tool_name, pending.tool_args) == ("shell_cmd", {"command": "touch X"})
    assert await aw.approvals("w") == [pending]
    memory = await aw.storage.memory("w", "a1", result.chat_id)
    original, request = memory[-2], memory[-1]
    assert original.tool_calls and original.tool_calls[0].id == "call_touch"
    assert request.tool_calls and request.tool_calls[0].function.name == "client.requestApproval"
    assert request.tool_calls[0].id == pending.tool_call_id
    arguments = json.loads(request.tool_calls[0].function.arguments)
    assert arguments["toolName"] == "shell_cmd" and arguments["toolArguments"] == {"command": "touch X"}
    assert arguments["options"] == ["deny", "once", "session", "always"]
    assert [e.phase for e in events if isinstance(e, ApprovalEvent)] == ["requested"]
    assert len(turns(server)) == 1


async def test_deny_tells_the_model_and_the_id_cannot_be_used_again(
    aw: AgentWorld, world: Path, model: Model, server: OpenAIWireServer
) -> None:
    model.plans.append([shell("touch X", "call_touch")])
    (pending,) = (await aw.send("w", "@a1 make X")).pending_approvals

    result = await aw.approve("w", pending.tool_call_id, decision="deny")

    assert not (world / "X").exists()
    assert "User denied approval for shell_cmd" in (result.messages[-1].content or "")
    denial = [m for m in result.messages if m.tool_call_id == "call_touch"]
    assert json.loads(denial[0].content or "{}") == {"error": "User denied approval for shell_cmd"}
    with pytest.raises(InvalidInputError, match="already answered"):
        await aw.approve("w", pending.tool_call_id, decision="approve")
    assert not (world / "X").exists()
    no_client_traffic(server)


async def test_approve_once_runs_the_original_call_and_the_next_call_asks_again(
    aw: AgentWorld, world: Path, model: Model, server: OpenAIWireServer
) -> None:
    model.plans += [[shell("touch X", "call_1")], [shell("touch X2", "call_2")]]
    (pending,) = (await aw.send("w", "@a1 make X")).pending_approvals

    result = await aw.approve("w", pending.tool_call_id, decision="approve", scope="once")

    assert (world / "X").exists()
    (real,) = [m for m in result.messages if m.tool_call_id == "call_1"]
    assert json.loads(real.content or "{}")["exit_code"] == 0
    assert result.messages[-1].content and result.messages[-1].content.startswith("saw:")
    again = await aw.send("w", "@a1 make another")
    assert len(again.pending_approvals) == 1 and not (world / "X2").exists()
    no_client_traffic(server)


async def test_an_approved_call_runs_like_an_allowed_one_its_tool_events_and_log_included(
    aw: AgentWorld, world: Path, model: Model
) -> None:
    model.plans.append([shell("touch Y", "call_y")])
    (pending,) = (await aw.send("w", "@a1 make Y")).pending_approvals
    seen: list[WorldEvent] = []
    (await aw.runtime("w")).bus.subscribe(seen.append, kinds=["tool"])

    await aw.approve("w", pending.tool_call_id, decision="approve")

    # Watchers (the web UI) see it start and end, as they see a call the policy allows ...
    assert [(e.phase, e.tool_call_id) for e in seen if isinstance(e, ToolEvent)] == [
        ("start", "call_y"),
        ("result", "call_y"),
    ]
    # ... the event log has both, and the tool log says it finished, with its output.
    stored = await aw.storage.list_events("w", kind="tool")
    assert [(e["phase"], e["toolCallId"]) for e in stored] == [("start", "call_y"), ("result", "call_y")]
    (log,) = await aw.tool_logs("w")
    assert (log.tool_call_id, log.status, log.finished_at is not None) == ("call_y", "ok", True)
    assert json.loads(log.output)["exit_code"] == 0


async def test_unknown_and_foreign_ids_are_refused_and_nothing_runs(
    aw: AgentWorld, world: Path, model: Model, make_world: Any
) -> None:
    model.plans.append([shell("touch X")])
    (pending,) = (await aw.send("w", "@a1 make X")).pending_approvals
    await aw.create_world("other")

    with pytest.raises(NotFoundError):
        await aw.approve("w", "approval_does_not_exist", decision="approve")
    with pytest.raises(NotFoundError):
        await aw.approve("other", pending.tool_call_id, decision="approve")
    assert not (world / "X").exists()
    assert len(await aw.approvals("w")) == 1


async def test_parallel_calls_are_asked_separately_and_the_loop_waits_for_both(
    aw: AgentWorld, world: Path, model: Model, server: OpenAIWireServer
) -> None:
    model.plans.append([shell("touch A", "call_a"), shell("touch B", "call_b")])
    result = await aw.send("w", "@a1 make A and B")
    first, second = result.pending_approvals
    assert {first.original_call_id, second.original_call_id} == {"call_a", "call_b"}

    partial = await aw.approve("w", second.tool_call_id, decision="approve")
    assert [m.content for m in partial.messages if m.role == "assistant" and not m.tool_calls] == []
    assert len(turns(server)) == 1  # the model waits until every call has a result
    final = await aw.approve("w", first.tool_call_id, decision="deny")

    assert (world / "B").exists() and not (world / "A").exists()
    assert len(turns(server)) == 2
    sent = [m for m in turns(server)[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in sent] == ["call_a", "call_b"]
    assert final.messages[-1].role == "assistant"


async def test_an_unanswered_request_times_out_and_the_model_is_told(
    aw: AgentWorld, make_world: Any, model: Model, tmp_path: Path
) -> None:
    await make_world("a1", working_dir=str(tmp_path), approval_timeout=0.2)
    model.plans.append([shell("touch X", "call_x")])
    (pending,) = (await aw.send("w", "@a1 make X")).pending_approvals

    await asyncio.sleep(0.4)
    runtime = await aw.runtime("w")
    await runtime.wait_until_idle()

    assert await aw.approvals("w") == []
    transcript = await aw.storage.transcript("w", pending.chat_id)
    timed_out = [m for m in transcript if m.tool_call_id == "call_x"]
    assert "timed out" in (timed_out[0].content or "")
    assert transcript[-1].role == "assistant" and "timed out" in (transcript[-1].content or "")
    with pytest.raises(InvalidInputError):
        await aw.approve("w", pending.tool_call_id, decision="approve")
    assert not (tmp_path / "X").exists()


async def test_a_pending_approval_survives_a_restart(
    db_url: str, world: Path, model: Model, tmp_path: Path, aw: AgentWorld
) -> None:
    model.plans.append([shell("touch X", "call_x")])
    (pending,) = (await aw.send("w", "@a1 make X")).pending_approvals
    await aw.close()

    async with AgentWorld(db_url) as again:
        assert [p.tool_call_id for p in await again.approvals("w")] == [pending.tool_call_id]
        result = await again.approve("w", pending.tool_call_id, decision="approve")
    assert (tmp_path / "X").exists()
    assert result.messages[-1].content and "saw:" in result.messages[-1].content


async def test_a_request_that_expires_while_no_process_runs_resumes_the_loop_on_next_touch(
    db_url: str, make_world: Any, model: Model, tmp_path: Path, aw: AgentWorld
) -> None:
    await make_world("a1", working_dir=str(tmp_path), approval_timeout=0.3)
    model.plans.append([shell("touch X", "call_x")])
    (pending,) = (await aw.send("w", "@a1 make X")).pending_approvals
    await aw.close()  # nobody runs the world while the request times out
    await asyncio.sleep(0.5)

    async with AgentWorld(db_url) as again:
        assert await again.approvals("w") == []  # touching the world denies it...
        transcript = await again.storage.transcript("w", pending.chat_id)
    # ...and the loop resumed: the model was told and answered.
    assert "timed out" in (transcript[-1].content or "") and transcript[-1].role == "assistant"
    assert [m.tool_call_id for m in transcript if m.role == "tool"].count("call_x") == 1
    assert not (tmp_path / "X").exists()


async def test_answering_one_of_two_waits_from_different_turns_does_not_resume_the_other(
    aw: AgentWorld, world: Path, model: Model, server: OpenAIWireServer
) -> None:
    model.plans.append([shell("touch A", "call_a")])
    model.plans.append([shell("touch B", "call_b")])
    (first,) = (await aw.send("w", "@a1 make A")).pending_approvals
    second = [p for p in (await aw.send("w", "@a1 make B")).pending_approvals if p != first]
    (second_pending,) = second
    asked = len(turns(server))

    # The earlier batch gets its result, but the agent's latest batch still waits: the model
    # is not asked with a conversation that ends in a call still waiting for a person.
    await aw.approve("w", first.tool_call_id, decision="approve")
    assert (world / "A").exists()
    assert len(turns(server)) == asked
    memory = await aw.storage.memory("w", "a1", first.chat_id)
    assert [m.tool_call_id for m in memory if m.role == "tool"].count("call_a") == 1

    result = await aw.approve("w", second_pending.tool_call_id, decision="approve")
    assert (world / "B").exists()
    assert len(turns(server)) == asked + 1  # once every wait is answered, one continuation
    last = turns(server)[-1]["messages"]
    results = {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}
    assert set(results) == {"call_a", "call_b"}
    assert all("waiting" not in content for content in results.values())
    assert result.messages[-1].role == "assistant"


async def test_non_interactive_runs_deny_instead_of_asking(
    db_url: str, world: Path, model: Model, tmp_path: Path, aw: AgentWorld
) -> None:
    model.plans.append([shell("touch X", "call_x")])
    await aw.close()
    async with AgentWorld(db_url, interactive=False) as batch:
        result = await batch.send("w", "@a1 make X")
        audit = await batch.audit_log("w")
    assert result.pending_approvals == []
    (denied,) = [m for m in result.messages if m.tool_call_id == "call_x"]
    assert "nobody can be asked" in json.loads(denied.content or "{}")["error"]
    assert not (tmp_path / "X").exists()
    # The automatic denial is a decision like any other: it is in the audit log.
    (entry,) = [e for e in audit if e.tool_name == "shell_cmd"]
    assert (entry.event, entry.actor, entry.decision) == ("policy", "non-interactive", "deny")
    assert entry.tool_args == {"command": "touch X"}
    assert "nobody can be asked" in (entry.detail or {})["reason"]


async def test_the_audit_log_records_requests_and_decisions_with_redacted_arguments(
    aw: AgentWorld, world: Path, model: Model
) -> None:
    model.plans += [[shell("export API_KEY=sk-abcdefghijklmnopqrstuvwx && touch X")], [shell("touch Y")]]
    (first,) = (await aw.send("w", "@a1 one")).pending_approvals
    await aw.approve("w", first.tool_call_id, decision="approve")
    (second,) = (await aw.send("w", "@a1 two")).pending_approvals
    await aw.approve("w", second.tool_call_id, decision="deny")

    log = await aw.audit_log("w")
    assert [(e.event, e.decision) for e in log] == [
        ("request", None), ("decision", "approve"), ("request", None), ("decision", "deny")
    ]
    assert "sk-abcdefghijklmnopqrstuvwx" not in repr(log)
    assert all(e.agent == "a1" and e.tool_name == "shell_cmd" for e in log)
    assert log[1].actor == "human" and log[1].latency_ms is not None
    assert "sk-abcdefghijklmnopqrstuvwx" not in json.dumps(first.detail)


async def test_the_request_shows_the_whole_call_and_the_audit_records_it(
    aw: AgentWorld, world: Path, model: Model
) -> None:
    call = {"command": "rm", "parameters": ["-rf", "--", "sub/precious"], "directory": "."}
    model.plans.append([ToolCallSpec(name="shell_cmd", arguments=json.dumps(call), id="call_rm")])
    (pending,) = (await aw.send("w", "@a1 clean up")).pending_approvals
    message = pending.message
    assert "`rm -rf -- sub/precious`" in message and str(world) in message
    assert pending.shell is not None and pending.shell.commands == ["rm -rf -- sub/precious"]
    (request,) = await aw.audit_log("w")
    assert request.detail is not None
    assert request.detail["shell"]["commandLine"] == "rm -rf -- sub/precious"
    assert request.detail["shell"]["directory"] == str(world)


@pytest.mark.parametrize("directory", ["/home", "..", "../elsewhere", "sub/../../x"])
async def test_a_directory_outside_the_working_directory_is_refused_before_anyone_is_asked(
    aw: AgentWorld, world: Path, model: Model, directory: str
) -> None:
    call = {"command": "touch X", "directory": directory}
    model.plans.append([ToolCallSpec(name="shell_cmd", arguments=json.dumps(call), id="call_x")])
    result = await aw.send("w", "@a1 make X")
    assert result.pending_approvals == []
    (refused,) = [m for m in result.messages if m.tool_call_id == "call_x"]
    assert "outside the working directory" in json.loads(refused.content or "{}")["error"]
