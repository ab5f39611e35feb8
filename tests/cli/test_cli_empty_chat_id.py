"""``--chat ""`` names a chat that does not exist, in every command: it is refused, never read
as "the current chat". A script that passes ``--chat "$UNSET"`` must fail, not post into
whatever chat happens to be current."""

from __future__ import annotations

from typing import Any

COMMANDS = [
    ("send", "w", "@a hi again"),
    ("send", "w", "@a hi again", "--json"),
    ("messages", "w"),
    ("messages", "w", "--json"),
    ("messages", "w", "--agent", "a"),
    ("approvals", "w"),
    ("tool-logs", "w"),
    ("pending", "w"),
]


def test_an_empty_chat_id_is_refused_by_every_command_and_nothing_is_posted(cli: Any) -> None:
    cli("world", "create", "w")
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", "echo")
    cli("send", "w", "@a hi")
    before = cli("messages", "w", "--json").json()["messages"]

    for command in COMMANDS:
        refused = cli(*command, "--chat", "", check=False)
        assert (refused.code, refused.stderr.strip()) == (1, "error: chat '' not found in world 'w'"), command

    assert cli("messages", "w", "--json").json()["messages"] == before
