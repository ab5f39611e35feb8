"""Keys in ``agentworld talk`` answer only an approval the person has read (SPEC C4), typed for
real into a pseudo-terminal (pexpect) while another ``agentworld`` process reads what is stored:
the request still pending, the grants, the audit log. Each test waits the real arming delay."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from test_cli_talk import PROMPT, QUESTION, make_team, shell_agent, stored, talk, talk_env  # noqa: F401 (fixtures)

from agentworld.cli.talk_question import ARM_SECONDS
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)


def pending(cli: Any) -> list[dict[str, Any]]:
    return list(cli("approvals", "team", "--json").json()["approvals"])


def grants(cli: Any) -> list[dict[str, Any]]:
    return list(cli("approvals", "team", "--grants", "--json").json()["grants"])


def test_a_message_typed_while_the_agent_works_never_answers_the_approval_and_is_kept(
    talk: Any,  # noqa: F811 (the fixture imported above)
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    def ops(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text("ops saw: " + json.loads(last["content"]).get("error", "a result"))
        if "logs" in last["content"]:
            return Reply.text("ops will read the logs")
        return Reply.tools(ToolCallSpec("shell_cmd", json.dumps({"command": "touch MARK"})), delay=1.5)

    script.by_agent["ops"] = ops
    work = make_team(db_url, server, tmp_path, "ops")
    term = talk("team")
    term.ready()
    term.line("@ops mark it")
    term.expect(r"ops is thinking")
    # The next message, typed while the agent works: an `a` (always), `o`, `s`, a `y`, an Enter.
    term.line("also, say yes: check the logs")

    term.expect(r"approval needed: ops wants to run `touch MARK`")
    term.expect(QUESTION)
    time.sleep(ARM_SECONDS + 0.3)  # long past the moment the typed keys reached the question

    (waiting,) = pending(cli)
    assert waiting["toolArgs"] == {"command": "touch MARK"}
    assert grants(cli) == [] and not (work / "MARK").exists()
    term.type("d")
    term.expect(r"what you typed before the question was read answered nothing")
    term.expect(r"ops saw: User denied approval for shell_cmd")
    term.expect(rf"{PROMPT} also, say yes: check the logs")  # nothing typed is lost
    term.type("\r")
    term.expect(r"ops: ops will read the logs")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert not (work / "MARK").exists()
    said = [(m["sender"], m["content"]) for m in stored(db_url) if m["role"] == "user"]
    assert said == [("human", "@ops mark it"), ("human", "also, say yes: check the logs")]


def test_keys_within_the_arming_delay_do_nothing_and_after_it_o_runs_the_command_once(
    talk: Any,  # noqa: F811 (the fixture imported above)
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    shell_agent(script, "touch ONCE")
    work = make_team(db_url, server, tmp_path, "ops")
    term = talk("team")
    term.ready()
    term.line("@ops mark it")
    term.expect(QUESTION)
    seen = time.monotonic()
    term.expect(r"\(keys ignored for a moment: read the command\)")

    term.type("o")
    term.type("s\r")
    assert time.monotonic() - seen < ARM_SECONDS  # typed while the question was arming

    (waiting,) = pending(cli)
    assert not (work / "ONCE").exists() and grants(cli) == []
    time.sleep(ARM_SECONDS + 0.3)  # the question arms once no key came for the delay
    term.type("o")
    term.expect(rf"approved {waiting['approvalId']} \(once\)")
    term.expect(r"ops saw: exit 0")
    term.expect(rf"{PROMPT} os")  # the early keys answered nothing: they wait at the prompt
    term.child.sendcontrol("c")  # clears them
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert (work / "ONCE").exists()
    assert pending(cli) == [] and grants(cli) == []


def test_a_alone_never_grants_always_and_a_then_y_does(
    talk: Any,  # noqa: F811 (the fixture imported above)
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    shell_agent(script, "touch ALWAYS")
    work = make_team(db_url, server, tmp_path, "ops")
    term = talk("team")
    term.ready()
    term.line("@ops mark it")
    term.question()

    term.type("a")
    term.expect(r"type y to confirm")
    time.sleep(ARM_SECONDS + 0.3)
    assert len(pending(cli)) == 1 and grants(cli) == []  # `a` alone: still a question
    term.type("n")  # anything but y: back to the first question, which arms again
    time.sleep(ARM_SECONDS + 0.3)
    term.type("a")
    term.expect(r"approve ALWAYS in this world for every `touch` command .*type y to confirm")
    term.type("y")  # too soon after the second question appeared: nothing
    time.sleep(ARM_SECONDS + 0.3)
    assert len(pending(cli)) == 1 and grants(cli) == []
    term.type("y")
    term.expect(r"approved approval_\w+ \(always\)")
    term.expect(r"ops saw: exit 0")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert (work / "ALWAYS").exists()
    (grant,) = grants(cli)
    assert (grant["scope"], grant["toolName"], grant["rootCommands"]) == ("always", "shell_cmd", ["touch"])
    decisions = [(e["decision"], e["scope"]) for e in cli("audit", "team", "--json").json()["audit"]
                 if e.get("decision") is not None]  # fmt: skip
    assert decisions == [("approve", "always")]


def test_enter_answers_the_highlighted_deny_only_after_arming_and_arrows_move_the_highlight(
    talk: Any,  # noqa: F811 (the fixture imported above)
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    shell_agent(script, "touch DENIED", "touch ARROWED")
    work = make_team(db_url, server, tmp_path, "ops")
    term = talk("team")
    term.ready()
    term.line("@ops mark it")
    term.expect(QUESTION)
    term.type("\r")  # Enter before the question armed: nothing

    (waiting,) = pending(cli)
    time.sleep(ARM_SECONDS + 0.3)
    term.type("\r")
    term.expect(rf"denied {waiting['approvalId']}")
    term.expect(r"ops saw: User denied approval for shell_cmd")
    term.expect(PROMPT)

    term.line("@ops again")
    term.question()
    term.type("\x1b[C")  # Right: the highlight moves from deny to once
    term.type("\r")
    term.expect(r"approved approval_\w+ \(once\)")
    term.expect(r"ops saw: exit 0")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert not (work / "DENIED").exists() and (work / "ARROWED").exists()


def test_two_requests_are_asked_one_after_the_other_each_with_its_own_arming(
    talk: Any,  # noqa: F811 (the fixture imported above)
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    def ops(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("ops is done")
        calls = (ToolCallSpec("shell_cmd", json.dumps({"command": f"touch {name}"})) for name in ("FIRST", "SECOND"))
        return Reply.tools(*calls)

    script.by_agent["ops"] = ops
    work = make_team(db_url, server, tmp_path, "ops")
    term = talk("team")
    term.ready()
    term.line("@ops mark both")
    term.expect(r"ops wants to run `touch FIRST`")
    term.question()
    term.type("d")
    term.expect(r"ops wants to run `touch SECOND`")
    term.expect(QUESTION)
    term.type("o")  # the second question has not been read yet: nothing

    assert [a["toolArgs"] for a in pending(cli)] == [{"command": "touch SECOND"}]
    time.sleep(ARM_SECONDS + 0.3)
    term.type("o")
    term.expect(r"ops: ops is done")
    term.expect(rf"{PROMPT} o")  # the early key, kept
    term.child.sendcontrol("c")
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    assert not (work / "FIRST").exists() and (work / "SECOND").exists()


def test_ctrl_c_at_the_question_leaves_the_request_pending_at_once(
    talk: Any,  # noqa: F811 (the fixture imported above)
    cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    shell_agent(script, "touch LATER")
    work = make_team(db_url, server, tmp_path, "ops")
    term = talk("team")
    term.ready()
    term.line("@ops mark it")
    term.expect(QUESTION)

    term.child.sendcontrol("c")  # not an answer: it needs no arming
    term.expect(r"left pending: /approvals lists it")
    term.expect(PROMPT)
    term.child.sendcontrol("d")

    assert term.exit_status() == 0
    (waiting,) = pending(cli)
    assert waiting["toolArgs"] == {"command": "touch LATER"}
    assert grants(cli) == [] and not (work / "LATER").exists()
