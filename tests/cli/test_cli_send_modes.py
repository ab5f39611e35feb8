"""``agentworld send`` in pipelines and on a terminal (issue 17): ``--approve ask|deny`` with
an exit status that says when a call was refused, and answers streamed live on a terminal
(a real pseudo-terminal, pexpect) while a pipe gets the whole output at the end. Agents talk
to the loopback OpenAI wire server; tools run in a real shell in a temp dir.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest
from test_cli_talk import Terminal, make_team, shell_agent, talk_env  # noqa: F401 (a fixture)

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)

REFUSED = re.compile(r"error: 1 tool call refused \(ops → shell_cmd\): shell_cmd needs a person's approval")


def test_approve_deny_refuses_what_needs_a_person_and_exits_3(
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    shell_agent(script, "touch DENIED")
    work = make_team(db_url, server, tmp_path, "ops")

    sent = cli("send", "team", "@ops mark it", "--approve", "deny", "--json", check=False)

    assert sent.code == 3, sent.stderr
    assert REFUSED.search(sent.stderr), sent.stderr
    document = sent.json()  # the usual document, whole, on stdout
    assert set(document) == {"chatId", "messages", "pendingApprovals", "pendingQuestions"} and document["pendingApprovals"] == []
    assert [m["content"] for m in document["messages"]][-1] == "ops saw: " + (
        "shell_cmd needs a person's approval, and nobody can be asked in this run"
    )
    assert not (work / "DENIED").exists()


def test_non_interactive_is_approve_deny(
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    shell_agent(script, "touch DENIED")
    work = make_team(db_url, server, tmp_path, "ops")

    sent = cli("send", "team", "@ops mark it", "--non-interactive", check=False)

    assert sent.code == 3 and REFUSED.search(sent.stderr), (sent.code, sent.stderr)
    assert "ops saw: shell_cmd needs a person's approval" in sent.stdout
    assert not (work / "DENIED").exists()


def test_approve_deny_exits_0_when_nothing_was_refused(
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    def ops(body: dict[str, Any]) -> Reply:  # read_file is read-only: the policy allows it
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text(f"ops read: {json.loads(last['content'])['content']}")
        return Reply.tools(ToolCallSpec("read_file", json.dumps({"path": "notes.txt"})))

    script.by_agent["ops"] = ops
    work = make_team(db_url, server, tmp_path, "ops")
    (work / "notes.txt").write_text("ship on friday")

    sent = cli("send", "team", "@ops look", "--approve", "deny", "--json")

    assert sent.code == 0 and sent.stderr == ""
    assert sent.json()["messages"][-1]["content"] == "ops read: ship on friday"


def test_approve_ask_leaves_the_call_waiting_with_the_commands_that_answer_it(
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    shell_agent(script, "touch ASKED")
    work = make_team(db_url, server, tmp_path, "ops")

    sent = cli("send", "team", "@ops mark it", "--approve", "ask")

    assert sent.code == 0
    assert "approval needed: ops wants to run `touch ASKED`" in sent.stdout
    (waiting,) = cli("approvals", "team", "--json").json()["approvals"]
    assert f"approve team {waiting['approvalId']} --decision approve" in sent.stdout
    assert not (work / "ASKED").exists()


def test_an_unknown_approve_mode_is_a_usage_error(cli: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path) -> None:
    make_team(db_url, server, tmp_path, "ops")
    sent = cli("send", "team", "@ops hi", "--approve", "maybe", check=False)
    assert (sent.code, sent.stdout) == (2, "")
    assert sent.stderr.strip() == "error: --approve must be ask or deny"
    assert cli("messages", "team", "--json").json()["messages"] == []  # nothing was sent


def test_on_a_terminal_the_answer_streams_and_is_printed_once(
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path,
    talk_env: dict[str, str],  # noqa: F811 (the fixture imported above)
) -> None:
    answer = "First the tests, then the tag, then the release notes."
    script.by_agent["planner"] = lambda body: Reply.text(answer, chunk_size=5, chunk_delay=0.2)
    make_team(db_url, server, tmp_path, "planner")
    child = pexpect.spawn(
        sys.executable, ["-m", "agentworld", "--db", db_url, "send", "team", "@planner how do we ship?"],
        env=talk_env, cwd=str(tmp_path), encoding="utf-8", dimensions=(50, 200), timeout=30,
    )  # fmt: skip
    term = Terminal(child)

    term.expect(r"planner: First the")
    assert "release notes" not in term.text  # the rest is still on its way
    term.expect(r"release notes\. \(\d+\.\d s\)")

    assert term.exit_status() == 0
    assert term.text.count("then the tag") == 1  # shown live, not printed again at the end
    stored = cli("messages", "team", "--json").json()["messages"]
    assert [(m["sender"], m["content"]) for m in stored] == [
        ("human", "@planner how do we ship?"),
        ("planner", answer),
    ]


def test_through_a_pipe_the_whole_output_comes_at_the_end(
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    script.by_agent["planner"] = lambda body: Reply.text("Tests, tag, notes.", chunk_size=4)
    make_team(db_url, server, tmp_path, "planner")

    sent = cli("send", "team", "@planner how do we ship?")

    lines = [line for line in sent.stdout.splitlines() if line.strip()]
    assert lines[0].startswith("human: @planner how do we ship?")
    assert any(line.startswith("planner: Tests, tag, notes.") for line in lines)
    assert "\x1b" not in sent.stdout  # plain text, no escape codes
