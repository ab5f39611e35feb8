"""`agentworld message edit|delete` as a person uses them, each command its own process: an edit
of a message with an approval pending after it removes the approval (answering it fails), runs
the world on the edited text and prints the `send` document; `audit` shows the edit; a delete
prints how many messages went; a message that is not a person's cannot be edited."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)

SHELL = ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": "rm -rf build"}))


@pytest.fixture
def world(cli: Any, script: Any, server: OpenAIWireServer, tmp_path: Path) -> str:
    script.by_agent["a1"] = lambda body: (
        Reply.tools(SHELL)
        if "clean" in str(body["messages"][-1].get("content"))
        else Reply.text(f"a1 heard: {body['messages'][-1].get('content')}")
    )
    (tmp_path / "work").mkdir()
    cli("world", "create", "w", "--working-dir", str(tmp_path / "work"))
    cli("agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    return "w"


def test_edit_removes_the_pending_approval_and_answers_the_edited_text(
    cli: Any, world: str, server: OpenAIWireServer
) -> None:
    cli("send", world, "@a1 hello")
    asked = cli("send", world, "@a1 clean the build", "--json").json()
    (approval,) = asked["pendingApprovals"]
    human = asked["messages"][0]

    edited = cli("message", "edit", world, human["messageId"], "@a1 list the build", "--json").json()

    assert set(edited) == {"chatId", "messages", "pendingApprovals", "pendingQuestions"}
    assert edited["chatId"] == asked["chatId"] and edited["pendingApprovals"] == []
    assert [(m["sender"], m["content"]) for m in edited["messages"]] == [
        ("human", "@a1 list the build"), ("a1", "a1 heard: @a1 list the build")
    ]
    refused = cli("approve", world, approval["approvalId"], "--decision", "approve", check=False)
    assert refused.code == 1 and "no approval request" in refused.stderr
    prompt = json.dumps(server.requests[-1]["messages"])
    assert "list the build" in prompt and "clean the build" not in prompt
    audit = cli("audit", world, "--json").json()["audit"]
    (entry,) = [e for e in audit if e["event"] == "message_edited"]
    removed = len(asked["messages"])  # the person's message, the call, the approval request
    assert entry["detail"]["messageId"] == human["messageId"] and entry["detail"]["removed"] == removed
    table = cli("audit", world).stdout
    assert "message_edited" in table and f"message {human['messageId']} ({removed} removed)" in table


def test_delete_prints_how_many_went_and_an_agents_message_is_not_edited(
    cli: Any, world: str
) -> None:
    first = cli("send", world, "@a1 one", "--json").json()
    cli("send", world, "@a1 two")
    answer = first["messages"][1]

    refused = cli("message", "edit", world, answer["messageId"], "changed", check=False)
    assert refused.code == 1 and "not a person's" in refused.stderr
    unknown = cli("message", "delete", world, "msg_nope", check=False)
    assert unknown.code == 1 and "not found" in unknown.stderr

    done = cli("message", "delete", world, answer["messageId"], "--json").json()

    assert done == {"chatId": first["chatId"], "removed": 3}
    plain = cli("message", "delete", world, first["messages"][0]["messageId"])
    assert plain.stdout.strip() == f"removed 1 message from chat {first['chatId']}"
    assert cli("messages", world, "--json").json()["messages"] == []


def test_edit_reads_the_new_text_from_standard_input(
    cli: Any, world: str, db_url: str, tmp_path: Path
) -> None:
    sent = cli("send", world, "@a1 one", "--json").json()
    proc = subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", db_url,
         "message", "edit", world, sent["messages"][0]["messageId"], "-", "--json"],
        input="@a1 from stdin\n", capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_COLOR": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["messages"][0]["content"] == "@a1 from stdin"
