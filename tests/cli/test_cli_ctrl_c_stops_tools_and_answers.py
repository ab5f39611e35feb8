"""Ctrl-C while a shell command runs, during ``approve``, ``answer`` and ``respond`` (SPEC K3): the
command's whole process tree is killed and its log says interrupted, the agent's turn goes no
further, and the command prints what was produced and exits 130.

Real ``agentworld`` processes given SIGINT, a real shell (in the sandbox where one can be made),
the scripted model and the loopback OpenAI wire server, on a real SQLite file.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from test_cli_ctrl_c_stops_the_turn import (
    SLOW,
    STOP_NOTE,
    a_quick_question_is_not_slowed,
    asked,
    contents,
    start,
    until,
)

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)

SLEEP = "sleep 30.37"
"""The long command; its odd length tells its processes from any other."""


def running(pattern: str) -> list[str]:
    """The pids of the processes whose command line holds ``pattern``."""
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()


def gone(pattern: str) -> bool:
    """Whether no process holding ``pattern`` is left (a moment is allowed for the kernel to
    reap the killed tree)."""
    deadline = time.monotonic() + 2
    while running(pattern):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def long_command_agent(cli: Any, tmp_path: Path, *world_options: str) -> Path:
    """World ``w`` whose scripted agent ``s`` runs ``touch STARTED; SLEEP; touch AFTER`` in
    ``work``, then says "finished"."""
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "long.json"
    call = {"name": "shell_cmd", "arguments": {"command": f"touch STARTED; {SLEEP}; touch AFTER"}}
    script.write_text(json.dumps([{"tool_calls": [call]}, "finished"]))
    cli("world", "create", "w", "--no-streaming", "--working-dir", str(work), *world_options)
    cli("agent", "create", "w", "s", "--provider", "scripted", "--model", f"file:{script}")
    return work


def interrupt(proc: subprocess.Popen[str], work: Path) -> tuple[dict[str, Any], str]:
    """SIGINT to ``proc`` once the long command runs; its JSON document and stderr."""
    until(lambda: (work / "STARTED").exists() and bool(running(SLEEP)))
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err
    return json.loads(out), err


def test_ctrl_c_while_a_shell_command_runs_kills_it_and_logs_it_interrupted(
    cli: Any, db_url: str, tmp_path: Path
) -> None:
    work = long_command_agent(cli, tmp_path, "--mode", "yolo")

    document, err = interrupt(start(db_url, tmp_path, "send", "w", "@s go", "--json"), work)

    assert gone(SLEEP)
    (log,) = cli("tool-logs", "w", "--json").json()["toolLogs"]
    assert log["status"] == "interrupted"
    assert document["interrupted"]["killedCalls"] == [log["toolCallId"]]
    assert [m["role"] for m in document["messages"]] == ["user", "assistant", "tool", "system"]
    assert "killed with every process it started" in document["messages"][2]["content"]
    assert document["messages"][3]["content"] == STOP_NOTE
    assert "error: interrupted: the chat's turn was stopped (1 running command killed" in err
    assert cli("resume", "w", "--json").json()["chats"] == []
    assert "finished" not in contents(cli)
    assert not (work / "AFTER").exists()


def test_ctrl_c_during_approve_kills_the_approved_command(cli: Any, db_url: str, tmp_path: Path) -> None:
    work = long_command_agent(cli, tmp_path)
    (approval,) = cli("send", "w", "@s go", "--json").json()["pendingApprovals"]

    document, err = interrupt(
        start(db_url, tmp_path, "approve", "w", approval["approvalId"], "--decision", "approve", "--json"),
        work,
    )

    assert gone(SLEEP)
    assert document["interrupted"]["stopped"] is True
    assert document["messages"][-1]["content"] == STOP_NOTE
    (log,) = cli("tool-logs", "w", "--json").json()["toolLogs"]
    assert log["status"] == "interrupted"
    assert "error: interrupted: the chat's turn was stopped" in err
    assert cli("resume", "w", "--json").json()["chats"] == []
    assert "finished" not in contents(cli)
    assert not (work / "AFTER").exists()


def test_ctrl_c_during_answer_stops_the_slow_turn_the_answer_started(
    cli: Any, db_url: str, tmp_path: Path, server: OpenAIWireServer, script: Any
) -> None:
    def deployer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text(f"deploying to {json.loads(last['content'])['answer']}", delay=SLOW)
        question = {"question": "Which environment?", "options": ["staging", "production"]}
        return Reply.tools(ToolCallSpec(name="ask_user", arguments=json.dumps(question), id="call_which"))

    script.by_agent["slow"] = deployer
    cli("world", "create", "w")
    for name in ("slow", "quick"):
        cli("agent", "create", "w", name, "--provider", "openai", "--model", "m",
            "--base-url", server.base_url, "--system-prompt", f"agent:{name}")  # fmt: skip
    (question,) = cli("send", "w", "@slow deploy it", "--json").json()["pendingQuestions"]

    proc = start(db_url, tmp_path, "answer", "w", question["questionId"], "staging", "--json")
    until(lambda: asked(server, "slow") == 2)
    answered_at = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=SLOW / 2)

    assert proc.returncode == 130, err
    document = json.loads(out)
    assert document["interrupted"]["stopped"] is True
    assert document["messages"][-1]["content"] == STOP_NOTE
    a_quick_question_is_not_slowed(cli)
    time.sleep(max(0.0, answered_at + SLOW + 0.5 - time.monotonic()))
    assert cli("resume", "w", "--json").json()["chats"] == []
    assert not [c for c in contents(cli) if "deploying" in (c or "")]
    assert asked(server, "slow") == 2


def test_ctrl_c_during_respond_stops_the_slow_turn_the_result_started(
    cli: Any, db_url: str, tmp_path: Path, server: OpenAIWireServer, script: Any
) -> None:
    declared = tmp_path / "client-tools.json"
    declared.write_text(json.dumps([{
        "name": "user_location", "description": "The user's location, from their browser.",
        "parameters": {"type": "object", "properties": {}},
    }]))  # fmt: skip

    def locator(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("you are in Lisbon", delay=SLOW)
        return Reply.tools(ToolCallSpec(name="user_location", arguments="{}", id="call_loc"))

    script.by_agent["slow"] = locator
    cli("world", "create", "w", "--client-tools", str(declared))
    cli("agent", "create", "w", "slow", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:slow")  # fmt: skip
    cli("send", "w", "@slow where am I?")

    proc = start(db_url, tmp_path, "respond", "w", "call_loc", "--result", '{"city": "Lisbon"}')
    until(lambda: asked(server, "slow") == 2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=SLOW / 2)

    assert proc.returncode == 130, err
    assert STOP_NOTE in out
    assert err.splitlines()[-1] == "error: interrupted: the chat's turn was stopped (1 queued step dropped)"
    assert cli("resume", "w", "--json").json()["chats"] == []
    assert "you are in Lisbon" not in contents(cli)
    assert cli("pending", "w", "--json").json() == {"pendingToolCalls": []}
