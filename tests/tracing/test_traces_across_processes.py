"""One trace across processes: a tool call's approval answered by ``agentworld approve`` in
another process, and a turn taken over after its ``send`` was killed with SIGKILL, continue
the trace of the message that started them, through the context stored with the waiting call
and the inbox work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec
from agentworld.testing.otlp import OtlpReceiver, ReceivedSpan, only


def _agent(cli: Any, server: OpenAIWireServer, *world_options: str) -> None:
    cli("world", "create", "w", *world_options)
    cli(
        "agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1",
    )


def by_service(spans: list[ReceivedSpan], service: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.service == service]


@pytest.mark.both_backends
def test_an_approval_answered_by_another_process_continues_the_trace_of_the_tool_call(
    cli: Any, script: Any, server: OpenAIWireServer, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("@human written", prompt_tokens=20, completion_tokens=2)
        command = json.dumps({"command": "echo note > notes.txt"})
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=command, id="call_1"), prompt_tokens=9, completion_tokens=4)

    script.by_agent["a1"] = model
    (tmp_path / "work").mkdir()
    _agent(cli, server, "--working-dir", str(tmp_path / "work"))
    sent = cli("send", "w", "@a1 write a note", "--json", env=receiver.env("asker")).json()
    (approval,) = sent["pendingApprovals"]
    receiver.wait_for(lambda s: any(x.name == "execute_tool shell_cmd" for x in s), "the asking process's tool span")
    time.sleep(0.2)  # the approval waits a moment: its span must show it
    cli("approve", "w", approval["approvalId"], "--decision", "approve", env=receiver.env("approver"))
    assert (tmp_path / "work" / "notes.txt").read_text() == "note\n"

    spans = receiver.wait_for(lambda s: len(by_service(s, "approver")) >= 4 and any(
        x.name == "chat m" and x.service == "approver" for x in s), "the approving process's spans")
    asker, approver = by_service(spans, "asker"), by_service(spans, "approver")
    post = only(asker, "post_message")
    assert {s.trace_id for s in spans} == {post.trace_id}  # one trace, both processes

    # The asking process: the turn, its model call asking for the tool, the call waiting.
    turn, asked_model, asked = only(asker, "invoke_agent a1"), only(asker, "chat m"), only(asker, "execute_tool shell_cmd")
    assert turn.parent_span_id == post.span_id
    assert asked_model.parent_span_id == turn.span_id and asked.parent_span_id == turn.span_id
    assert asked_model["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert (asked_model["gen_ai.usage.input_tokens"], asked_model["gen_ai.usage.output_tokens"]) == (9, 4)
    assert asked.attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "shell_cmd",
        "gen_ai.tool.call.id": "call_1",
        "agentworld.tool.phase": "call",
        "agentworld.tool.decision": "ask",
        "agentworld.tool.decided_by": "human",
        "agentworld.tool.status": "waiting",
    }

    # The approving process: the wait, from the request to the answer, under the call that
    # asked; the approved run under it; then the agent's turn going on, under it too.
    wait, ran = only(approver, "await_approval shell_cmd"), only(approver, "execute_tool shell_cmd")
    resumed, answered_model = only(approver, "invoke_agent a1"), only(approver, "chat m")
    assert wait.parent_span_id == asked.span_id
    assert wait.start_ns <= asked.end_ns + 50_000_000 and wait.end_ns - wait.start_ns >= 200_000_000
    assert wait.attributes == {
        "gen_ai.tool.name": "shell_cmd",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.agent.name": "a1",
        "gen_ai.conversation.id": sent["chatId"],
        "agentworld.wait.kind": "approval",
        "agentworld.wait.id": approval["approvalId"],
        "agentworld.wait.status": "answered",
        "agentworld.approval.decision": "approve",
        "agentworld.approval.decided_by": "human",
        "agentworld.approval.scope": "once",
    }
    assert ran.parent_span_id == wait.span_id
    assert ran.attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "shell_cmd",
        "gen_ai.tool.call.id": "call_1",
        "agentworld.tool.phase": "approved",
        "agentworld.tool.status": "ok",
        "process.exit.code": 0,
    }
    assert resumed.parent_span_id == wait.span_id
    assert answered_model.parent_span_id == resumed.span_id
    assert answered_model["gen_ai.response.finish_reasons"] == ("stop",)
    assert (answered_model["gen_ai.usage.input_tokens"], answered_model["gen_ai.usage.output_tokens"]) == (20, 2)


def _start_send(cli_env: dict[str, str], db_url: str, tmp_path: Path, text: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1", **cli_env}
    return subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", db_url, "send", "w", text],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def test_a_turn_taken_over_after_its_process_was_killed_continues_its_trace(
    cli: Any, db_url: str, tmp_path: Path, receiver: OtlpReceiver
) -> None:
    release = threading.Event()
    asked: list[str] = []

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        asked.append(last)
        if last == "@a1 slow question" and not release.is_set():
            release.wait(60)  # the first process is killed while this call is in flight
            return Reply.text("too late")
        return Reply.text(f"@human answer to: {last}")

    with OpenAIWireServer(responder=answer) as server:
        _agent(cli, server, "--no-streaming")
        proc = _start_send(receiver.env("killed"), db_url, tmp_path, "@a1 slow question")
        try:
            receiver.wait_for(lambda s: any(x.name == "post_message" for x in s), "the killed process's post")
            deadline = time.monotonic() + 30
            while "@a1 slow question" not in asked:
                assert time.monotonic() < deadline, "the model was never asked"
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
        cli("send", "w", "@a1 are you back?", env=receiver.env("next"))

    spans = receiver.wait_for(lambda s: len([x for x in s if x.name == "chat m"]) >= 2, "the next process's calls")
    killed, after = by_service(spans, "killed"), by_service(spans, "next")
    post = only(killed, "post_message")
    assert not [s for s in killed if s.name.startswith(("invoke_agent", "chat"))]  # died mid-turn
    # The next process finishes the killed turn in the killed process's trace, and answers its
    # own message in a trace of its own.
    own_post = only(after, "post_message")
    assert own_post.trace_id != post.trace_id
    turns = [s for s in after if s.name == "invoke_agent a1"]
    taken_over = [s for s in turns if s.trace_id == post.trace_id]
    assert len(taken_over) == 1 and taken_over[0].parent_span_id == post.span_id
    (finished,) = [s for s in after if s.name == "chat m" and s.parent_span_id == taken_over[0].span_id]
    assert finished.trace_id == post.trace_id
    assert [s.trace_id for s in turns if s is not taken_over[0]] == [own_post.trace_id]


def test_a_question_answered_and_an_approval_expired_in_other_processes_are_waits_of_their_traces(
    cli: Any, script: Any, server: OpenAIWireServer, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    which = {"question": "Which environment?", "options": ["staging", "production"], "allowFreeText": False}

    def model(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text("@human done")
        if "deploy" in last["content"]:
            return Reply.tools(ToolCallSpec(name="ask_user", arguments=json.dumps(which), id="call_ask"))
        command = json.dumps({"command": "echo x > x.txt"})
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=command, id="call_x"))

    script.by_agent["a1"] = model
    (tmp_path / "work").mkdir()
    _agent(cli, server, "--working-dir", str(tmp_path / "work"))
    (question,) = cli("send", "w", "@a1 deploy", "--json", env=receiver.env("asker")).json()["pendingQuestions"]
    cli("answer", "w", question["questionId"], "staging", env=receiver.env("answerer"))
    cli("world", "update", "w", "--approval-timeout", "1")
    (approval,) = cli("send", "w", "@a1 write", "--json", env=receiver.env("asker")).json()["pendingApprovals"]
    time.sleep(1.5)
    assert cli("approvals", "w", "--json", env=receiver.env("expirer")).json()["approvals"] == []

    spans = receiver.wait_for(
        lambda s: any(x.service == "expirer" and x.name == "chat m" for x in s), "the expiring process's spans"
    )
    asked = {s["gen_ai.tool.call.id"]: s for s in spans if s.name.startswith("execute_tool") and s.service == "asker"}
    answered = only(by_service(spans, "answerer"), "await_answer ask_user")
    assert answered.parent_span_id == asked["call_ask"].span_id
    assert answered.trace_id == asked["call_ask"].trace_id
    assert (answered["agentworld.wait.kind"], answered["agentworld.wait.status"]) == ("question", "answered")
    assert (answered["agentworld.approval.decision"], answered["agentworld.approval.decided_by"]) == ("answer", "human")
    assert asked["call_ask"]["agentworld.tool.status"] == "waiting"

    expired = only(by_service(spans, "expirer"), "await_approval shell_cmd")
    assert expired.parent_span_id == asked["call_x"].span_id
    assert expired.trace_id == asked["call_x"].trace_id != answered.trace_id
    assert expired["agentworld.wait.status"] == "expired"
    assert (expired["agentworld.approval.decision"], expired["agentworld.approval.decided_by"]) == ("deny", "timeout")
    assert expired.end_ns - expired.start_ns >= 1_000_000_000
    resumed = only(by_service(spans, "expirer"), "invoke_agent a1")
    assert resumed.parent_span_id == expired.span_id
