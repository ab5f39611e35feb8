"""Approvals across processes through the CLI (issue acceptance 1–7): every command below is a
separate `agentworld` process on the same SQLite file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)


class Model:
    """a1 asks for the next planned shell command on each user message; reads results back."""

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("result: " + body["messages"][-1]["content"])
        if not self.commands:
            return Reply.text("nothing to do")
        return Reply.tools(
            *(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": c})) for c in self.commands.pop(0))
        )


@pytest.fixture
def model(script: Any, cli: Any, server: OpenAIWireServer, tmp_path: Path) -> Model:
    planned = Model()
    script.by_agent["a1"] = planned
    (tmp_path / "work").mkdir()
    cli("world", "create", "w1", "--working-dir", str(tmp_path / "work"))
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    return planned


def ask(cli: Any, model: Model, *commands: str, chat: str | None = None) -> dict[str, Any]:
    model.commands.append(list(commands))
    args = ["send", "w1", "@a1 please", "--json"] + (["--chat", chat] if chat else [])
    return cli(*args).json()


def test_request_deny_and_replay(cli: Any, model: Model, tmp_path: Path, server: OpenAIWireServer) -> None:
    sent = ask(cli, model, "touch X")

    (approval,) = sent["pendingApprovals"]
    assert set(approval) == {
        "approvalId", "agent", "chatId", "toolName", "toolArgs", "message", "createdAt", "sandbox", "diff"
    }
    assert approval["diff"] is None  # only file tools carry a diff
    assert approval["sandbox"] == {"active": True, "writable": [str(tmp_path / "work")], "network": "deny"}
    assert (approval["toolName"], approval["toolArgs"]) == ("shell_cmd", {"command": "touch X"})
    assert "touch X" in approval["message"]
    assert not (tmp_path / "work" / "X").exists()
    assert cli("approvals", "w1", "--json").json() == {"approvals": [approval]}

    denied = cli("approve", "w1", approval["approvalId"], "--decision", "deny", "--json").json()

    assert not (tmp_path / "work" / "X").exists()
    assert "User denied approval for shell_cmd" in denied["messages"][-1]["content"]
    assert denied["pendingApprovals"] == []
    replay = cli("approve", "w1", approval["approvalId"], "--decision", "approve", check=False)
    assert replay.code == 1 and "already" in replay.stderr
    assert not (tmp_path / "work" / "X").exists()
    assert "client." not in json.dumps(server.requests)


def test_approve_once_then_asked_again(cli: Any, model: Model, tmp_path: Path) -> None:
    (approval,) = ask(cli, model, "touch X")["pendingApprovals"]
    done = cli("approve", "w1", approval["approvalId"], "--decision", "approve", "--scope", "once", "--json").json()
    assert (tmp_path / "work" / "X").exists()
    assert '\\"exit_code\\": 0' in json.dumps(done["messages"][-1]["content"]) or "exit_code" in done["messages"][-1]["content"]
    assert len(ask(cli, model, "touch X2")["pendingApprovals"]) == 1
    assert not (tmp_path / "work" / "X2").exists()


def test_session_scope_covers_the_same_root_command_in_that_chat_only(
    cli: Any, model: Model, tmp_path: Path
) -> None:
    first = ask(cli, model, "touch A")
    (approval,) = first["pendingApprovals"]
    cli("approve", "w1", approval["approvalId"], "--decision", "approve", "--scope", "session")
    chat = first["chatId"]

    unasked = ask(cli, model, "touch B", chat=chat)
    assert unasked["pendingApprovals"] == [] and (tmp_path / "work" / "B").exists()

    compound = ask(cli, model, "touch C && rm B", chat=chat)
    assert len(compound["pendingApprovals"]) == 1
    assert (tmp_path / "work" / "B").exists() and not (tmp_path / "work" / "C").exists()

    other_chat = cli("chat", "new", "w1", "--json").json()["chatId"]
    elsewhere = ask(cli, model, "touch D", chat=other_chat)
    assert len(elsewhere["pendingApprovals"]) == 1 and not (tmp_path / "work" / "D").exists()

    grants = cli("approvals", "w1", "--grants", "--json").json()["grants"]
    assert [(g["scope"], g["rootCommands"], g["chatId"]) for g in grants] == [("session", ["touch"], chat)]
    cli("approvals", "w1", "--revoke", grants[0]["grantId"])
    waiting = ask(cli, model, "touch E", chat=chat)["pendingApprovals"]
    assert [a["toolArgs"]["command"] for a in waiting] == ["touch C && rm B", "touch E"]
    assert not (tmp_path / "work" / "E").exists()


def test_unknown_and_foreign_ids_are_refused(cli: Any, model: Model, tmp_path: Path) -> None:
    (approval,) = ask(cli, model, "touch X")["pendingApprovals"]
    cli("world", "create", "w2")
    for world, approval_id in (("w1", "approval_nope"), ("w2", approval["approvalId"])):
        refused = cli("approve", world, approval_id, "--decision", "approve", check=False)
        assert refused.code == 1 and len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "work" / "X").exists()
    assert len(cli("approvals", "w1", "--json").json()["approvals"]) == 1


def test_parallel_calls_are_answered_independently(cli: Any, model: Model, tmp_path: Path) -> None:
    first, second = ask(cli, model, "touch P", "touch Q")["pendingApprovals"]
    cli("approve", "w1", second["approvalId"], "--decision", "approve")
    assert [a["approvalId"] for a in cli("approvals", "w1", "--json").json()["approvals"]] == [first["approvalId"]]
    done = cli("approve", "w1", first["approvalId"], "--decision", "approve", "--json").json()
    assert (tmp_path / "work" / "P").exists() and (tmp_path / "work" / "Q").exists()
    assert done["messages"][-1]["role"] == "assistant"


def test_the_audit_log_lists_every_request_and_decision(cli: Any, model: Model) -> None:
    (one,) = ask(cli, model, "touch X")["pendingApprovals"]
    cli("approve", "w1", one["approvalId"], "--decision", "deny")
    (two,) = ask(cli, model, "touch Y")["pendingApprovals"]
    cli("approve", "w1", two["approvalId"], "--decision", "approve", "--scope", "session")
    audit = cli("audit", "w1", "--json").json()["audit"]
    assert [(e["event"], e["approvalId"], e["decision"], e["scope"]) for e in audit] == [
        ("request", one["approvalId"], None, None),
        ("decision", one["approvalId"], "deny", "once"),
        ("request", two["approvalId"], None, None),
        ("decision", two["approvalId"], "approve", "session"),
    ]


def test_non_interactive_send_denies_instead_of_asking(cli: Any, model: Model, tmp_path: Path) -> None:
    model.commands.append(["touch X"])
    refused = cli("send", "w1", "@a1 please", "--non-interactive", "--json", check=False)
    assert refused.code == 3 and "nobody can be asked" in refused.stderr
    sent = refused.json()
    assert sent["pendingApprovals"] == []
    assert "nobody can be asked" in sent["messages"][-1]["content"]
    assert not (tmp_path / "work" / "X").exists()


@pytest.mark.in_process_only(
    reason="on Temporal a worker runs the approved call, so a killed approve takes nothing with it (README, Running on Temporal)"
)
def test_a_crash_while_an_approved_call_runs_is_reported_not_rerun(
    cli: Any, model: Model, tmp_path: Path, db_url: str
) -> None:
    marker = tmp_path / "work" / "runs.txt"
    (approval,) = ask(cli, model, "echo run >> runs.txt; sleep 30; touch finished")["pendingApprovals"]
    env = {**os.environ, "HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", db_url, "approve", "w1", approval["approvalId"],
         "--decision", "approve"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.read_text() == "run\n"
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI and the command it runs die together
    proc.wait(10)

    listed = cli("approvals", "w1", "--json").json()  # the next process notices and reports it
    assert listed["approvals"] == []
    transcript = cli("messages", "w1", "--json").json()["messages"]
    interrupted = [m for m in transcript if m["role"] == "tool" and "interrupted" in (m["content"] or "")]
    assert len(interrupted) == 1
    assert marker.read_text() == "run\n"  # not run a second time
    assert not (tmp_path / "work" / "finished").exists()
    logs = cli("tool-logs", "w1", "--json").json()["toolLogs"]
    assert [e["status"] for e in logs if e["toolName"] == "shell_cmd"] == ["interrupted"]


def test_approving_an_expired_request_is_refused_and_the_model_is_told_all_the_same(
    cli: Any, model: Model, tmp_path: Path, server: OpenAIWireServer
) -> None:
    """The refusal comes after the process has done what ``resume`` does: the expired request
    is denied and the model told (SPEC A7), not left queued for the next command."""
    cli("world", "update", "w1", "--approval-timeout", "1")
    (approval,) = ask(cli, model, "touch X")["pendingApprovals"]
    time.sleep(1.5)

    late = cli("approve", "w1", approval["approvalId"], "--decision", "approve", check=False)

    assert late.code == 1 and "expired" in late.stderr
    assert not (tmp_path / "work" / "X").exists()
    told = [r["messages"][-1] for r in server.requests if r["messages"][-1]["role"] == "tool"]
    assert len(told) == 1 and "timed out" in told[0]["content"]
    transcript = cli("messages", "w1", "--json").json()["messages"]
    assert transcript[-1]["role"] == "assistant" and transcript[-1]["content"].startswith("result: ")
    assert cli("approvals", "w1", "--json").json() == {"approvals": []}
