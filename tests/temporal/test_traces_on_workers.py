"""One trace across a Temporal worker: the message posted by `send` and the turn a worker
runs for it (its model call, its tool call asking for approval), then the approval answered by
`agentworld approve` in a third process and the approved run on the worker, are spans of the
trace the post began — the context travels with the stored work, not with Temporal."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec
from agentworld.testing.otlp import OtlpReceiver, only


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_turn_on_a_worker_and_its_approval_from_another_process_are_one_trace(
    tcli: Any, workers: Any, script: Any,
    server: OpenAIWireServer, receiver: OtlpReceiver, tmp_path: Path,
) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("@human written")
        command = json.dumps({"command": "echo note > notes.txt"})
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=command, id="call_1"))

    script.by_agent["a1"] = model
    work = tmp_path / "work"
    work.mkdir()
    tcli("world", "create", "w", "--working-dir", str(work))
    tcli(
        "agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1",
    )
    workers.start(env=receiver.env("worker"))

    sent = tcli("send", "w", "@a1 write a note", "--json", env=receiver.env("sender")).json()
    (approval,) = sent["pendingApprovals"]
    receiver.wait_for(
        lambda s: any(x.name == "execute_tool shell_cmd" and x.service == "worker" for x in s),
        "the worker's tool span",
    )
    time.sleep(0.2)
    tcli("approve", "w", approval["approvalId"], "--decision", "approve", env=receiver.env("approver"))
    assert (work / "notes.txt").read_text() == "note\n"

    spans = receiver.wait_for(
        lambda s: sum(x.name == "chat m" and x.service == "worker" for x in s) >= 2,
        "the worker's second model call (after the approved run)",
    )
    post = only([s for s in spans if s.service == "sender"], "post_message")
    assert {s.trace_id for s in spans} == {post.trace_id}  # sender, worker, approver: one trace
    on_worker = [s for s in spans if s.service == "worker"]
    turn = next(s for s in on_worker if s.name == "invoke_agent a1" and s.parent_span_id == post.span_id)
    asked = next(s for s in on_worker if s.name == "execute_tool shell_cmd" and s["agentworld.tool.phase"] == "call")
    # The tool call is an activity of its own: its span of the agent's loop is the model
    # call's sibling, under the message's trace, as a process taking a loop over continues it.
    continued = next(s for s in on_worker if s.span_id == asked.parent_span_id)
    assert continued.name == "invoke_agent a1" and continued.parent_span_id == post.span_id
    assert continued.span_id != turn.span_id and asked["agentworld.tool.decision"] == "ask"
    assert any(s.name == "chat m" and s.parent_span_id == turn.span_id for s in on_worker)
    wait = only([s for s in spans if s.service == "approver"], "await_approval shell_cmd")
    assert wait.parent_span_id == asked.span_id
    ran = next(s for s in on_worker if s.name == "execute_tool shell_cmd" and s["agentworld.tool.phase"] == "approved")
    assert ran.trace_id == post.trace_id
