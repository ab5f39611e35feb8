"""Redirect grants across processes through the CLI (SPEC C3): every command is a separate
`agentworld` process on the same SQLite file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)


class Model:
    """a1 asks for the next planned shell command on each user message."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool" or not self.commands:
            return Reply.text("done")
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": self.commands.pop(0)})))


@pytest.fixture
def model(script: Any, cli: Any, server: OpenAIWireServer, tmp_path: Path) -> Model:
    planned = Model()
    script.by_agent["a1"] = planned
    (tmp_path / "work").mkdir()
    cli("world", "create", "w1", "--working-dir", str(tmp_path / "work"))
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    return planned


def ask(cli: Any, model: Model, command: str, chat: str | None = None) -> dict[str, Any]:
    model.commands.append(command)
    return cli("send", "w1", "@a1 please", "--json", *(["--chat", chat] if chat else [])).json()


@pytest.mark.parametrize("scope", ["session", "always"])
def test_an_approved_redirect_covers_its_file_in_later_processes_and_nothing_else(
    cli: Any, model: Model, tmp_path: Path, scope: str
) -> None:
    work = tmp_path / "work"
    first = ask(cli, model, "echo note > notes.txt")
    (approval,) = first["pendingApprovals"]
    cli("approve", "w1", approval["approvalId"], "--decision", "approve", "--scope", scope)
    chat = first["chatId"]

    (grant,) = cli("approvals", "w1", "--grants", "--json").json()["grants"]
    assert (grant["rootCommands"], grant["redirectTargets"]) == (["echo"], ["notes.txt"])
    assert ask(cli, model, "echo more >> notes.txt", chat)["pendingApprovals"] == []
    assert (work / "notes.txt").read_text() == "note\nmore\n"

    outside = ask(cli, model, "echo key >> ../authorized_keys", chat)["pendingApprovals"]
    assert [a["toolArgs"]["command"] for a in outside] == ["echo key >> ../authorized_keys"]
    assert not (tmp_path / "authorized_keys").exists()

    verdict = cli("policy", "test", "w1", "--tool", "shell_cmd", "--args",
                  json.dumps({"command": "echo x > sub/notes.txt"}), "--json").json()
    assert verdict["decision"] == "ASK_USER"
