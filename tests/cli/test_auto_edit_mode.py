"""auto_edit mode: file changes inside the working directory run without asking; a world's own
DENY rule, paths out of the directory and protected files still win."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _decide(cli: Any, *args: str, tool: str, path: str) -> dict[str, Any]:
    body = {"old": "a", "new": "b"} if tool == "edit_file" else {"command": "rm x"} if tool == "shell_cmd" else {"content": "x\n"}
    call = json.dumps({**({} if tool == "shell_cmd" else {"path": path}), **body})
    result: dict[str, Any] = cli("policy", "test", *args, "--tool", tool, "--args", call, "--json").json()
    return result


def test_file_changes_inside_the_working_directory_are_allowed_in_auto_edit_only(cli: Any, tmp_path: Path) -> None:
    cli("world", "create", "w", "--working-dir", str(tmp_path), "--mode", "auto_edit")
    allowed = _decide(cli, "w", tool="edit_file", path="src/app.py")
    assert allowed["decision"] == "ALLOW" and allowed["rule"]["name"] == "file changes in auto_edit mode"
    assert _decide(cli, "w", tool="write_file", path="notes.md")["decision"] == "ALLOW"
    assert _decide(cli, "w", tool="write_file", path="../outside.md")["decision"] == "ASK_USER"
    assert _decide(cli, "w", tool="write_file", path="/etc/motd")["decision"] == "ASK_USER"
    assert _decide(cli, "w", "--mode", "default", tool="write_file", path="notes.md")["decision"] == "ASK_USER"
    assert _decide(cli, "w", tool="shell_cmd", path="")["decision"] == "ASK_USER"


def test_a_turn_in_auto_edit_writes_without_asking_but_a_deny_rule_and_protected_files_win(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "bot.json").write_text(json.dumps([
        {"content": "Editing.", "tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes/plan.md", "content": "step 1\n"}},
            {"name": "write_file", "arguments": {"path": "docs/readme.md", "content": "nope\n"}},
            {"name": "write_file", "arguments": {"path": "policy.toml", "content": "# emptied\n"}},
        ]},
        "@human done",
    ]))
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rule]]\ntoolName = "shell_cmd"\ndecision = "deny"\npriority = 1\n')
    file = tmp_path / "w.toml"
    file.write_text(
        '[world]\nname = "w"\npolicyMode = "auto_edit"\npolicyFiles = ["policy.toml"]\n\n'
        '[[agents]]\nname = "bot"\nprovider = "scripted"\nmodel = "file:bot.json"\n\n'
        '[[rules]]\ntoolName = "write_file"\npathPrefix = "docs"\ndecision = "deny"\npriority = 1\n'
        'denyMessage = "docs are written by people"\n'
    )
    cli("apply", str(file))
    sent = cli("send", "w", "@bot write the plan", timeout=120)
    assert "approval requested" not in sent.stdout
    assert cli("approvals", "w", "--json").json()["approvals"] == []
    assert (tmp_path / "notes" / "plan.md").read_text() == "step 1\n"
    assert not (tmp_path / "docs").exists()
    assert policy.read_text().startswith("[[rule]]")  # the world's policy file is never written
    memory = json.dumps(cli("messages", "w", "--agent", "bot", "--json").json())
    assert "docs are written by people" in memory
