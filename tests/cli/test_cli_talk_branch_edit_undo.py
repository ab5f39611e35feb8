"""Going back in a chat from ``agentworld talk`` (SPEC K1, K2), typed for real into a
pseudo-terminal against agents on the loopback OpenAI wire server, with other ``agentworld``
processes reading what is stored: ``/branch N`` goes on in a chat holding messages #1–#N (and
the model is sent exactly that history), ``/edit N`` removes what followed (a pending approval
too) and the agent answers the new text, ``/undo`` removes the last exchange, type-ahead never
confirms a removal (C4), and changes other processes make to the chat are said. On SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_cli_talk import PROMPT, QUESTION, Terminal, make_team, stored, talk, talk_env  # noqa: F401 (fixtures)

from agentworld.cli.talk_question import ARM_SECONDS
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = [pytest.mark.both_backends, pytest.mark.both_engines_wide]  # on SQLite and PostgreSQL; on Temporal too in the wide run (tests/conftest.py)

CONFIRM = r"\[n\]o \[y\]es"
WORDS = ("alpha", "bravo", "charlie", "delta", "echo")


def confirmed(term: Terminal, question: str) -> None:
    """Wait for the removal question ``question`` (a regex), armed."""
    term.expect(question)
    term.expect(CONFIRM)
    term.expect(r"keys ignored for a moment: read the question")
    time.sleep(ARM_SECONDS + 0.3)


def ten_messages(cli: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path) -> None:
    """World ``team`` whose current chat holds ten messages: five of a person's, each answered
    by ``planner`` (the loopback server echoes: ``planner heard: …``)."""
    make_team(db_url, server, tmp_path, "planner")
    for word in WORDS:
        cli("send", "team", f"@planner {word}")


def contents(cli: Any, *args: str) -> list[str]:
    return [m["content"] for m in cli("messages", "team", *args, "--json").json()["messages"]]


def test_branch_3_of_ten_messages_goes_on_in_a_chat_holding_those_three_and_the_model_gets_them(
    talk: Any, cli: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    ten_messages(cli, server, db_url, tmp_path)
    source = contents(cli)
    (chat,) = {m["chatId"] for m in cli("messages", "team", "--json").json()["messages"]}
    term = talk("team")
    term.ready()
    term.line("/messages")
    term.expect(r"#1  human: @planner alpha")
    term.expect(r"#3  human: @planner bravo")
    term.expect(r"#10 planner: planner heard: @planner echo")

    term.line("/branch 3")
    shown = term.expect(r"branched at #3: now in chat (chat_\w+)")
    (branch,) = re.findall(r"now in chat (chat_\w+)", shown)
    term.expect(PROMPT)
    assert contents(cli, "--chat", branch) == source[:3] == [
        "@planner alpha", "planner heard: @planner alpha", "@planner bravo",
    ]  # fmt: skip
    assert contents(cli, "--chat", chat) == source  # the source chat is untouched

    asked = len(server.requests)
    term.line("@planner what next?")
    term.expect(r"planner: planner heard: @planner what next\?")
    term.expect(PROMPT)
    term.child.sendcontrol("d")
    assert term.exit_status() == 0

    (request,) = [body for body in server.requests[asked:] if body["messages"][0]["content"] == "agent:planner"]
    history = [m["content"] for m in request["messages"][1:]]
    assert [h for h in history if any(w in h for w in (*WORDS, "what next"))] == [
        *source[:3], "@planner what next?",
    ]  # fmt: skip
    assert contents(cli, "--chat", branch)[3:] == ["@planner what next?", "planner heard: @planner what next?"]


def test_edit_of_a_message_with_an_approval_pending_after_it_removes_the_approval_and_the_agent_answers_anew(
    talk: Any, cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    def ops(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "user" and "mark" in last["content"]:
            return Reply.tools(ToolCallSpec("shell_cmd", json.dumps({"command": "touch MARK"})))
        return Reply.text(f"ops heard: {last['content']}")

    script.by_agent["ops"] = ops
    work = make_team(db_url, server, tmp_path, "ops")
    term = talk("team")
    term.ready()
    term.line("@ops mark it")
    term.expect(r"approval needed: ops wants to run `touch MARK`")
    term.question()
    term.type("l")  # left pending
    term.expect(r"left pending")
    term.expect(PROMPT)
    (waiting,) = cli("approvals", "team", "--json").json()["approvals"]

    term.line("/edit 2")  # an agent's message
    term.expect(r"message #2 is ops's, not a person's")
    term.line("/edit 1")
    term.expect(r"edit #1 › @ops mark it")
    term.type("\x15")  # Ctrl-U: the line emptied
    term.line("@ops just say hi")
    confirmed(term, r"replace #1 and remove the \d+ messages after it\?")
    term.type("y")
    term.expect(r"✎ edited: \d+ messages removed")
    term.expect(r"ops: ops heard: @ops just say hi")
    term.expect(PROMPT)
    term.child.sendcontrol("d")
    assert term.exit_status() == 0

    assert cli("approvals", "team", "--json").json()["approvals"] == []
    refused = cli("approve", "team", waiting["approvalId"], "--decision", "approve", check=False)
    assert refused.code != 0 and not (work / "MARK").exists()
    assert [(m["sender"], m["content"]) for m in stored(db_url)] == [
        ("human", "@ops just say hi"), ("ops", "ops heard: @ops just say hi"),
    ]  # fmt: skip


def test_undo_removes_the_last_exchange_and_says_how_many_messages_went(
    talk: Any, cli: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    make_team(db_url, server, tmp_path, "planner")
    term = talk("team")
    term.ready()
    for word in ("one", "two"):
        term.line(f"@planner {word}")
        term.expect(rf"planner: planner heard: @planner {word}")
        term.expect(PROMPT)

    term.line("/undo")
    confirmed(term, r"remove #3 \(human's message\) and the 1 message after it\?")
    term.type("y")
    term.expect(r"✂ removed 2 messages \(#3 on\)")
    term.expect(PROMPT)
    assert [m["content"] for m in stored(db_url)] == ["@planner one", "planner heard: @planner one"]

    term.line("@planner three")  # the chat goes on from what is left
    term.expect(r"planner: planner heard: @planner three")
    term.expect(PROMPT)
    term.child.sendcontrol("d")
    assert term.exit_status() == 0
    assert [m["content"] for m in stored(db_url)][2:] == ["@planner three", "planner heard: @planner three"]


def test_keys_typed_ahead_never_confirm_a_removal_and_wait_at_the_prompt(
    talk: Any, cli: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    make_team(db_url, server, tmp_path, "planner")
    term = talk("team")
    term.ready()
    term.line("@planner one")
    term.expect(r"planner: planner heard: @planner one")
    term.expect(PROMPT)

    term.type("/undo\ryy\r")  # a yes typed before the question is on the screen
    term.expect(CONFIRM)
    time.sleep(ARM_SECONDS + 0.5)  # long past the moment the typed keys reached the question
    assert len(stored(db_url)) == 2
    term.type("n")
    term.expect(r"what you typed before the question was read answered nothing")
    term.expect(r"nothing removed")
    term.expect(rf"{PROMPT} yy")  # kept for the next message, not sent
    term.child.sendcontrol("c")  # clears it
    term.child.sendcontrol("d")
    assert term.exit_status() == 0
    assert [m["content"] for m in stored(db_url)] == ["@planner one", "planner heard: @planner one"]


@pytest.mark.in_process_only(
    reason="on Temporal a removal stops the turn a worker runs instead of being refused (README, Running on Temporal)"
)
def test_a_removal_while_another_process_runs_the_chat_is_refused_in_one_line_and_changes_nothing(
    talk: Any, cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path,  # noqa: F811
    talk_env: dict[str, str],  # noqa: F811
) -> None:
    script.by_agent["planner"] = lambda body: Reply.text("slowly", delay=4.0)
    make_team(db_url, server, tmp_path, "planner")
    term = talk("team")
    term.ready()
    sending = subprocess.Popen(  # another process runs the chat meanwhile
        [sys.executable, "-m", "agentworld", "--db", db_url, "send", "team", "@planner take your time"],
        env=talk_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        term.expect(r"human: @planner take your time")  # shown here as it is stored there
        term.line("/undo")
        confirmed(term, r"remove #1 \(human's message\)\?")
        term.type("y")
        shown = term.expect(r"✖ [^\n]+\n")
        term.expect(PROMPT)
        (refusal,) = [line.split("✖", 1)[1] for line in shown.splitlines() if "✖" in line]
        assert re.fullmatch(r" chat 'chat_\w+' is being run by another process\b.*; nothing changed", refusal)
        assert "✂" not in shown
        assert [m["content"] for m in stored(db_url)][:1] == ["@planner take your time"]
    finally:
        sending.wait(timeout=30)
    term.child.sendcontrol("d")
    assert term.exit_status() == 0
    assert [m["content"] for m in stored(db_url)] == ["@planner take your time", "slowly"]


def test_a_removal_or_a_branch_made_by_another_process_is_said_in_one_line(
    talk: Any, cli: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    ten_messages(cli, server, db_url, tmp_path)
    messages = cli("messages", "team", "--json").json()["messages"]
    term = talk("team")
    term.ready()

    chat = messages[0]["chatId"]
    made = cli("chat", "branch", "team", messages[1]["messageId"], "--chat", chat, "--json").json()["chatId"]
    term.expect(rf"⑂ chat {made} was branched from this chat elsewhere \(/switch {made} goes there\)")
    cli("message", "delete", "team", messages[6]["messageId"], "--chat", chat)
    term.expect(r"✂ 4 messages of this chat removed by another process \(deleted from a message on\)")
    cli("message", "edit", "team", messages[4]["messageId"], "@planner foxtrot", "--chat", chat)
    # The note comes from talk's look at the log, the new message from following the world:
    # either may be first on the screen; both are said.
    term.expect(r"(✂ 2 messages of this chat removed by another process \(a message was edited there"
                r"[\s\S]*human: @planner foxtrot|human: @planner foxtrot[\s\S]*✂ 2 messages of this"
                r" chat removed by another process \(a message was edited there)")
    term.expect(r"planner: planner heard: @planner foxtrot")
    term.child.sendcontrol("d")
    assert term.exit_status() == 0


def test_an_approval_asked_here_that_another_process_removes_by_an_edit_leaves_the_prompt(
    talk: Any, cli: Any, script: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path  # noqa: F811
) -> None:
    def ops(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "user" and "mark" in last["content"]:
            return Reply.tools(ToolCallSpec("shell_cmd", json.dumps({"command": "touch MARK"})))
        return Reply.text(f"ops heard: {last['content']}")

    script.by_agent["ops"] = ops
    work = make_team(db_url, server, tmp_path, "ops")
    term = talk("team")
    term.ready()
    term.line("@ops mark it")
    term.question()
    (first, *_) = stored(db_url)

    cli("message", "edit", "team", first["messageId"], "@ops just say hi")
    term.expect(r"✂ \d+ messages of this chat removed by another process \(a message was edited there")
    term.expect(r"approval approval_\w+ was answered elsewhere")
    term.expect(r"ops: ops heard: @ops just say hi")
    term.expect(PROMPT)
    term.type("o")  # the question is gone: this is the next message's first letter
    term.child.sendcontrol("c")
    term.child.sendcontrol("d")
    assert term.exit_status() == 0
    assert not (work / "MARK").exists()
