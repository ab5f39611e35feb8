"""Text people stored cannot drive the terminal of whoever lists it. Before, ``messages``
escaped a message's ESC/BEL but ``world show``/``world list`` printed a world's description
raw, ``agent show`` an agent's system prompt, ``chat list`` and the Markdown export a chat's
name — a name ``chat rename`` accepted with escape sequences in it, or a title generated from
the first message — so anyone who could post a message could retitle or clear the terminal of
whoever listed the chats. ``--json`` keeps every stored value exactly.

Real ``agentworld`` processes on a real SQLite file; one test writes a hostile name straight
into the file, as an older database may hold one.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

HOSTILE = "D\x1b[31mRED\x1b]0;pwned\x07 \x9b2J \u202eevil\u202c \x7f end"
RAW = ("\x1b", "\x07", "\x9b", "\x7f", "\u202e", "\u202c")


def assert_clean(text: str) -> None:
    found = [repr(c) for c in RAW if c in text]
    assert not found, f"raw control characters printed: {found}\n{text!r}"


def world_with_agent(cli: Any, **options: str) -> None:
    extra = [word for key, value in options.items() for word in (f"--{key}", value)]
    cli("world", "create", "e", *extra)
    cli("agent", "create", "e", "a", "--provider", "scripted", "--model", "echo",
        "--system-prompt", "SP\x1b[2J\x1b]0;pwned\x07\nsecond line")  # fmt: skip


def test_a_world_description_is_shown_escaped_and_kept_exact_in_json(cli: Any) -> None:
    created = cli("world", "create", "e", "--description", HOSTILE)
    shown = cli("world", "show", "e").stdout
    listed = cli("world", "list").stdout

    for out in (created.stdout, shown, listed):
        assert_clean(out)
    assert "D\\e[31mRED\\e]0;pwned\\u0007" in shown
    assert "D\\e[31mRED" in listed
    for args in (("world", "show", "e"), ("world", "list")):
        raw = cli(*args, "--json").stdout
        assert_clean(raw)  # DEL, C1 and bidi characters are \u escapes in the JSON too
        document = json.loads(raw)
        worlds = document.get("worlds", [document])
        assert worlds[0]["description"] == HOSTILE


def test_an_agent_system_prompt_is_shown_escaped_and_kept_exact_in_json(cli: Any) -> None:
    world_with_agent(cli)
    shown = cli("agent", "show", "e", "a").stdout

    assert_clean(shown)
    assert "SP\\e[2J\\e]0;pwned\\u0007\nsecond line" in shown  # its newlines stay
    prompt = cli("agent", "show", "e", "a", "--json").json()["systemPrompt"]
    assert prompt == "SP\x1b[2J\x1b]0;pwned\x07\nsecond line"


def test_chat_rename_refuses_control_characters_with_one_error_line(cli: Any) -> None:
    world_with_agent(cli)
    chat = cli("chat", "new", "e").stdout.strip()

    for name in ("N\x1b[31mRED\x1b]0;x\x07", "bell\x07", "over\u202eride", "c1\x9b2J"):
        refused = cli("chat", "rename", "e", chat, name, check=False)
        assert refused.code == 1, refused
        assert refused.stdout == ""
        assert_clean(refused.stderr)
        (line,) = refused.stderr.splitlines()
        assert line.startswith("error: a chat name cannot contain control characters"), line
    assert cli("chat", "list", "e", "--json").json()["chats"][0]["name"] == "New chat"
    # Blanks are still folded, as before.
    renamed = cli("chat", "rename", "e", chat, "two\twords\n", "--json").json()
    assert renamed["name"] == "two words"


def test_a_generated_title_holds_no_control_characters(cli: Any) -> None:
    world_with_agent(cli)
    cli("send", "e", "@a \x1b]0;PWNED\x07\x1b[31mhello \x07there")

    listed = cli("chat", "list", "e").stdout
    (chat,) = cli("chat", "list", "e", "--json").json()["chats"]

    assert_clean(listed)
    assert chat["name"] == "hello there"
    assert "PWNED" not in listed


def test_a_stored_hostile_chat_name_is_shown_escaped_everywhere(cli: Any, tmp_path: Path) -> None:
    """A name stored before names were checked (or by another program) still cannot drive the
    terminal: ``chat list``, ``chat use`` and the Markdown export escape it."""
    world_with_agent(cli)
    cli("send", "e", "@a hi \x1b[31mred\x07")
    (chat,) = cli("chat", "list", "e", "--json").json()["chats"]
    with sqlite3.connect(tmp_path / "agentworld.db") as conn:
        conn.execute("UPDATE chats SET name = ?", (HOSTILE,))
    chat_id = chat["chatId"]

    listed = cli("chat", "list", "e").stdout
    used = cli("chat", "use", "e", chat_id).stdout
    exported = cli("chat", "export", "e", chat_id).stdout
    out_file = tmp_path / "chat.md"
    cli("chat", "export", "e", chat_id, "--out", str(out_file))

    for out in (listed, used, exported, out_file.read_text()):
        assert_clean(out)
    assert exported.startswith("# D\\e[31mRED\\e]0;pwned\\u0007")
    assert "hi \\e[31mred\\u0007" in exported  # a message's body is escaped as well
    assert cli("chat", "list", "e", "--json").json()["chats"][0]["name"] == HOSTILE


def test_an_error_line_quoting_a_given_path_is_escaped(cli: Any, tmp_path: Path) -> None:
    world_with_agent(cli)
    chat = cli("chat", "new", "e").stdout.strip()
    out = tmp_path / "no\x1b]0;pwned\x07dir" / "chat.md"

    failed = cli("chat", "export", "e", chat, "--out", str(out), check=False)

    assert failed.code == 1
    assert_clean(failed.stderr)
    assert "no\\e]0;pwned\\u0007dir" in failed.stderr


def test_a_tool_description_from_an_mcp_server_is_shown_escaped(cli: Any, tmp_path: Path) -> None:
    server = tmp_path / "hostile_mcp.py"
    server.write_text(
        "from mcp.server.mcpserver import MCPServer\n"
        "server = MCPServer('hostile', log_level='WARNING')\n"
        f"@server.tool(description={HOSTILE!r})\n"
        "def look(text: str) -> str:\n"
        "    return text\n"
        "server.run()\n"
    )
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"h": {"command": sys.executable, "args": [str(server)]}}})
    )
    cli("world", "create", "e", "--working-dir", str(tmp_path), "--mcp-config", str(config))

    listed = cli("tools", "e")

    assert_clean(listed.stdout + listed.stderr)
    assert "h__look" in listed.stdout and "D\\e[31mRED" in listed.stdout
    (tool,) = [t for t in cli("tools", "e", "--json").json()["tools"] if t["name"] == "h__look"]
    assert tool["description"] == HOSTILE
