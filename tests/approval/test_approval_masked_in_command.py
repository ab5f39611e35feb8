"""A masked value that is part of what runs is called out (SPEC A1, "the person sees exactly
what runs"), not only a masked value the line expands (``$VAR``): ``echo Bearer <base64> |
cut -c8- | base64 -d | sh`` shown as ``echo Bearer [REDACTED:bearer] | ... | sh`` with no
warning would have the person approve a hidden payload."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.approval.display import approval_message, shell_view

WD = "/work/project"
KEY = "sk-" + "a1B2c3D4" * 4 + "e5F6"


@pytest.mark.parametrize(
    "arguments",
    [
        {"command": "echo Bearer dG91Y2ggUFdOX2I2NAo= | cut -c8- | base64 -d | sh"},
        {"command": f"echo {KEY}|sh"},
        {"command": "echo password=cm0gLXJmIC4uLyoK | cut -d= -f2 | base64 -d"},
        {"command": "sh", "parameters": ["-c", f"echo {KEY} | sh"]},
        {"command": "curl", "parameters": ["-H", f"Authorization: Bearer {KEY}", "https://x"]},
    ],
)
def test_a_line_with_a_masked_value_says_the_value_is_part_of_what_runs(arguments: dict[str, Any]) -> None:
    view = shell_view(arguments, working_dir=WD)
    assert "[REDACTED:" in view.command_line
    assert "masked here as a secret" in view.note
    assert "part of what runs" in view.note
    message, shown = approval_message("shell_cmd", None, "a1", arguments, working_dir=WD)
    assert shown == view
    assert "part of what runs" in message
    assert view.to_json()["note"] == view.note


def test_the_expanded_variable_note_is_kept_alongside() -> None:
    view = shell_view({"command": 'DECOY_TOKEN=victim; rm -f "$DECOY_TOKEN"'}, working_dir=WD)
    assert "part of what runs" in view.note
    assert "$DECOY_TOKEN" in view.note and "depends on a value not shown" in view.note


@pytest.mark.parametrize("command", ["ls -la", "echo hello | base64 -d | sh", "git log | head -3"])
def test_a_line_masking_did_not_change_has_no_masking_note(command: str) -> None:
    view = shell_view({"command": command}, working_dir=WD)
    assert "[REDACTED:" not in view.command_line
    assert "masked" not in view.note


def test_the_cli_listing_and_its_json_carry_the_note(cli: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    command = "echo Bearer dG91Y2ggUFdOX2I2NAo= | cut -c8- | base64 -d | sh"
    script = tmp_path / "script.json"
    call = {"id": "c1", "name": "shell_cmd", "arguments": {"command": command}}
    script.write_text(json.dumps([{"content": "", "tool_calls": [call]}, "done"]))
    cli("world", "create", "w", "--no-streaming", "--working-dir", str(work))
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", f"file:{script}")
    cli("send", "w", "@a go", check=False)

    listed = cli("approvals", "w").stdout
    assert "[REDACTED:bearer]" in listed
    assert "part of what runs" in listed

    (pending,) = json.loads(cli("approvals", "w", "--json").stdout)["approvals"]
    assert "[REDACTED:bearer]" in pending["toolArgs"]["command"]
    assert "part of what runs" in pending["message"]
