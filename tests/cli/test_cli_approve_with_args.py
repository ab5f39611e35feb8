"""`agentworld approve ... --args JSON` (SPEC F2): a person corrects a pending call and approves
it, each command a separate process on the same database. The correction runs in the real
working directory, the model is told, the audit log keeps both; a correction the world's DENY
rule matches, or one the tool refuses, is one line on stderr, and the request still waits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)

DENY_CURL = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = "curl"
decision = "deny"
priority = 900
name = "no-curl"
"""


class Model:
    """a1 asks for the next planned shell command on each person's message; reads results back."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("result: " + body["messages"][-1]["content"])
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": self.commands.pop(0)})))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    directory = tmp_path / "work"
    directory.mkdir()
    (directory / "notes.txt").write_text("keep me\n")
    return directory


@pytest.fixture
def model(script: Any, cli: Any, server: OpenAIWireServer, work: Path, tmp_path: Path) -> Model:
    planned = Model()
    script.by_agent["a1"] = planned
    policy = tmp_path / "deny-curl.toml"
    policy.write_text(DENY_CURL)
    cli("world", "create", "w1", "--working-dir", str(work), "--policy", str(policy))
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    return planned


def ask(cli: Any, model: Model, command: str) -> str:
    model.commands.append(command)
    (approval,) = cli("send", "w1", "@a1 tidy up", "--json").json()["pendingApprovals"]
    return str(approval["approvalId"])


def test_a_corrected_command_runs_the_model_is_told_and_the_audit_keeps_both(
    cli: Any, model: Model, work: Path, server: OpenAIWireServer
) -> None:
    approval = ask(cli, model, "rm -f notes.txt")

    done = cli("approve", "w1", approval, "--decision", "approve",
               "--args", '{"command": "cp notes.txt notes.bak"}', "--json").json()

    assert (work / "notes.txt").exists() and (work / "notes.bak").read_text() == "keep me\n"
    assert set(done) >= {"chatId", "messages", "pendingApprovals"} and done["pendingApprovals"] == []
    result = done["messages"][-2]["content"]
    assert result.startswith("Note: a person changed this call's arguments before approving it;")
    told = [r["messages"] for r in server.requests if r["messages"][-1]["role"] == "tool"][-1]
    assert told[-1]["content"].startswith("Note: a person changed")
    assert json.loads(told[-2]["tool_calls"][0]["function"]["arguments"]) == {"command": "cp notes.txt notes.bak"}
    assert done["messages"][-1]["content"].startswith("result: Note: a person changed")

    (decision,) = [e for e in cli("audit", "w1", "--json").json()["audit"] if e["event"] == "decision"]
    assert decision["toolArgs"] == {"command": "cp notes.txt notes.bak"}
    assert decision["detail"]["originalArgs"] == {"command": "rm -f notes.txt"}
    assert decision["detail"]["edited"] is True
    messages = cli("messages", "w1", "--agent", "a1", "--json").json()["messages"]
    assert any("rm -f notes.txt" in json.dumps(m["tool_calls"]) for m in messages if m["tool_calls"])


def test_a_correction_a_deny_rule_matches_is_refused_in_one_line_and_the_request_still_waits(
    cli: Any, model: Model, work: Path
) -> None:
    approval = ask(cli, model, "touch asked")

    refused = cli("approve", "w1", approval, "--decision", "approve",
                  "--args", '{"command": "curl -o got http://example.com"}', check=False)

    assert refused.code == 1 and refused.stdout == ""
    (line,) = refused.stderr.strip().splitlines()
    assert "no-curl" in line and "still waits" in line
    assert not (work / "got").exists() and not (work / "asked").exists()
    waiting = cli("approvals", "w1", "--json").json()["approvals"]
    assert [a["approvalId"] for a in waiting] == [approval]
    cli("approve", "w1", approval, "--decision", "deny")
    assert cli("approvals", "w1", "--json").json()["approvals"] == []
    assert not (work / "asked").exists()


@pytest.mark.parametrize(
    ("args", "code", "reason"),
    [
        ("[1, 2]", 1, "--args must be a JSON object"),
        ("{not json", 1, "--args is not valid JSON"),
        ('{"command": NaN}', 1, "--args is not valid JSON"),
        ('{"cmd": "ls"}', 1, "do not fit the tool"),
        ('{"command": "ls", "directory": "/etc"}', 1, "cannot run"),
    ],
)
def test_arguments_that_are_no_call_of_the_tool_are_refused_in_one_line(
    cli: Any, model: Model, args: str, code: int, reason: str
) -> None:
    approval = ask(cli, model, "touch asked")
    refused = cli("approve", "w1", approval, "--decision", "approve", "--args", args, check=False)
    assert refused.code == code
    (line,) = refused.stderr.strip().splitlines()
    assert reason in line
    assert len(cli("approvals", "w1", "--json").json()["approvals"]) == 1


def test_args_with_a_denial_is_a_usage_error(cli: Any, model: Model) -> None:
    approval = ask(cli, model, "touch asked")
    refused = cli("approve", "w1", approval, "--decision", "deny", "--args", '{"command": "ls"}', check=False)
    assert refused.code == 2 and "a denied call does not run" in refused.stderr
    assert len(cli("approvals", "w1", "--json").json()["approvals"]) == 1


def test_args_from_standard_input_and_an_always_grant_for_the_correction_only(
    cli: Any, model: Model, work: Path, db_url: str, tmp_path: Path
) -> None:
    approval = ask(cli, model, "rm -f notes.txt")
    env = {k: v for k, v in os.environ.items() if k != "AGENTWORLD_DB"} | {"HOME": str(tmp_path), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", db_url, "approve", "w1", approval,
         "--decision", "approve", "--scope", "always", "--args", "-", "--json"],
        input='{"command": "touch made"}\n', capture_output=True, text=True,
        env=env, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (work / "made").exists() and (work / "notes.txt").exists()
    grants = cli("approvals", "w1", "--grants", "--json").json()["grants"]
    assert [(g["scope"], g["rootCommands"]) for g in grants] == [("always", ["touch"])]
    model.commands.append("touch again")
    assert cli("send", "w1", "@a1 more", "--json").json()["pendingApprovals"] == []
    assert (work / "again").exists()
    ask(cli, model, "rm -f notes.txt")  # the original command is still asked about
    assert (work / "notes.txt").exists()
