"""A chat id or agent name the world does not have is an error in every command that takes one
— one line, exit 1, nothing on stdout — never an empty answer that reads as "nothing there";
and output names an agent as it was created, whatever the case it is typed in (docs/cli.md).

Real ``agentworld`` processes on a real SQLite file with the scripted model.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

# Not a read-only command: a sandboxed world allows those without asking.
SHELL_LS = ("--tool", "shell_cmd", "--args", json.dumps({"command": "sleep 0"}))


def refused(result: Any, line: str) -> None:
    assert (result.code, result.stdout, result.stderr) == (1, "", f"error: {line}\n")


@pytest.mark.parametrize(
    "command",
    [
        ("pending", "w", "--chat", "chat_nope"),
        ("tool-logs", "w", "--chat", "chat_nope"),
        ("policy", "test", "w", *SHELL_LS, "--agent", "a", "--chat", "chat_nope"),
    ],
)
def test_an_unknown_chat_id_is_refused_as_approvals_refuses_it(
    cli: Any, command: tuple[str, ...]
) -> None:
    cli("world", "create", "w", "--no-streaming")
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", "echo")

    refused(cli(*command, check=False), "chat 'chat_nope' not found in world 'w'")
    refused(cli(*command, "--json", check=False), "chat 'chat_nope' not found in world 'w'")


def test_policy_test_refuses_an_unknown_agent_and_finds_a_known_one_in_any_case(cli: Any) -> None:
    cli("world", "create", "w", "--no-streaming")
    cli("agent", "create", "w", "Ops", "--provider", "scripted", "--model", "echo")
    chat = cli("chat", "new", "w", "--json").json()["chatId"]

    unknown = cli("policy", "test", "w", *SHELL_LS, "--agent", "nobody", "--chat", chat, "--json", check=False)
    known = cli("policy", "test", "w", *SHELL_LS, "--agent", "oPS", "--chat", chat, "--json")

    refused(unknown, "agent 'nobody' not found in world 'w'")
    assert known.json()["decision"] == "ASK_USER"


def test_messages_of_an_agent_name_it_as_it_was_created(cli: Any) -> None:
    cli("world", "create", "w", "--no-streaming")
    cli("agent", "create", "w", "Zed", "--provider", "scripted", "--model", "echo")
    cli("agent", "create", "w", "Quiet", "--provider", "scripted", "--model", "echo")
    cli("send", "w", "@zed hello")

    remembered = cli("messages", "w", "--agent", "ZED", "--json").json()
    empty = cli("messages", "w", "--agent", "qUIET", "--json").json()  # by the command tree
    empty_text = cli("messages", "w", "--agent", "qUIET").stdout

    assert remembered["agent"] == "Zed" and len(remembered["messages"]) == 2
    assert (empty["agent"], empty["messages"]) == ("Quiet", [])
    assert empty_text == "no messages yet in the memory of Quiet\n"


def test_agent_delete_names_the_agent_as_it_was_created(cli: Any) -> None:
    cli("world", "create", "w", "--no-streaming")
    cli("agent", "create", "w", "Zed", "--provider", "scripted", "--model", "echo")
    cli("agent", "create", "w", "Kai", "--provider", "scripted", "--model", "echo")
    cli("world", "update", "w", "--main-agent", "kai")

    deleted = cli("agent", "delete", "w", "zED", "--json").json()
    said = cli("agent", "delete", "w", "KAI")

    assert deleted == {"deleted": "Zed"}
    assert said.stdout == "deleted agent Kai\n"
    assert said.stderr == "note: Kai was the main agent of world w; it has no main agent now\n"
    refused(cli("agent", "delete", "w", "zed", check=False), "agent 'zed' not found in world 'w'")
