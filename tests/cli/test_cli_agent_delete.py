"""Deleting an agent ends everything that was only its own (SPEC A3, A5, A9; §3 errors).

Before, its pending approvals stayed approvable (the tool then ran for an agent that no longer
existed) and its session grants applied to a new agent created with the same name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)

CLIENT_TOOLS = [
    {
        "name": "pick_color",
        "description": "Ask the user to pick a color.",
        "parameters": {"type": "object", "properties": {"prompt": {"type": "string"}}},
    }
]


def shell(command: str) -> dict[str, Any]:
    return {"name": "shell_cmd", "arguments": {"command": command}}


def scripted(cli: Any, tmp_path: Path, name: str, script: list[Any]) -> None:
    path = tmp_path / f"{name}-{len(list(tmp_path.glob('*.json')))}.json"
    path.write_text(json.dumps(script))
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", f"file:{path}")


def one_line_error(result: Any, *words: str) -> str:
    assert result.code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return str(lines[0])


def test_deleting_an_agent_cancels_its_waits_and_a_namesake_inherits_nothing(
    cli: Any, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    tools = tmp_path / "client-tools.json"
    tools.write_text(json.dumps(CLIENT_TOOLS))
    cli("world", "create", "w", "--no-streaming", "--working-dir", str(work),
        "--client-tools", str(tools))  # fmt: skip
    pick = {"id": "call_pick", "name": "pick_color", "arguments": {"prompt": "any"}}
    scripted(cli, tmp_path, "a", [
        {"tool_calls": [shell("sleep 0")]}, "listed",
        {"tool_calls": [shell("touch one")]}, "touched",
        {"tool_calls": [shell("mkdir gone"), pick]}, "never",
    ])  # fmt: skip

    # A session grant (sleep: not read-only, so asked even in a sandbox) and an always grant
    # (touch), then a turn left waiting on both a person (mkdir gone) and the client
    # (pick_color).
    (ls,) = cli("send", "w", "@a list", "--json").json()["pendingApprovals"]
    cli("approve", "w", ls["approvalId"], "--decision", "approve", "--scope", "session")
    (touch,) = cli("send", "w", "@a touch", "--json").json()["pendingApprovals"]
    cli("approve", "w", touch["approvalId"], "--decision", "approve", "--scope", "always")
    (gone,) = cli("send", "w", "@a once more", "--json").json()["pendingApprovals"]
    assert [p["toolCallId"] for p in cli("pending", "w", "--json").json()["pendingToolCalls"]] == [
        "call_pick"
    ]
    scopes = {g["scope"] for g in cli("approvals", "w", "--grants", "--json").json()["grants"]}
    assert scopes == {"session", "always"}

    cli("agent", "delete", "w", "a")

    refused = cli("approve", "w", gone["approvalId"], "--decision", "approve", check=False)
    one_line_error(refused, "no longer pending", "agent 'a' was deleted")
    assert refused.stdout == ""
    assert not (work / "gone").exists()
    answered = cli("respond", "w", "call_pick", "--result", '{"color": "teal"}', check=False)
    one_line_error(answered, "no longer pending", "agent 'a' was deleted")
    assert cli("approvals", "w", "--json").json() == {"approvals": []}
    assert cli("pending", "w", "--json").json() == {"pendingToolCalls": []}
    grants = cli("approvals", "w", "--grants", "--json").json()["grants"]
    assert [(g["scope"], g["agent"], g["rootCommands"]) for g in grants] == [
        ("always", None, ["touch"])
    ]
    audit = cli("audit", "w", "--json").json()["audit"]
    cancelled = {e["approvalId"] for e in audit if e["event"] == "cancelled"}
    assert cancelled == {gone["approvalId"], "call_pick"}
    (deleted,) = [e for e in audit if e["event"] == "agent_deleted"]
    assert deleted["agent"] == "a" and deleted["detail"]["sessionGrantsRevoked"] == 1

    # A new agent named "a": no memory, no session grant (ls asks again); the world's always
    # grant still covers touch.
    scripted(cli, tmp_path, "a", [{"tool_calls": [shell("sleep 0"), shell("touch two")]}, "done"])
    assert cli("messages", "w", "--agent", "a", "--json").json()["messages"] == []
    fresh = cli("send", "w", "@a again", "--json").json()
    assert [json.loads(p["toolArgs"]) if isinstance(p["toolArgs"], str) else p["toolArgs"]
            for p in fresh["pendingApprovals"]] == [{"command": "sleep 0"}]  # fmt: skip
    assert (work / "two").exists()
    memory = cli("messages", "w", "--agent", "a", "--json").json()["messages"]
    assert memory[0]["content"] == "@a again"
