"""A scripted model that repeats tool-call ids, driven through the CLI (SPEC §3, O2, A3, T4).

Before the fix the second insert of an id failed with ``sqlite3.IntegrityError`` and the
SQL statement was printed to the user; the turn was lost.
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


def scripted_agent(cli: Any, tmp_path: Path, script: list[Any], **world: str) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    options = [x for key, value in world.items() for x in (f"--{key}", value)]
    cli("world", "create", "w", "--no-streaming", "--working-dir", str(tmp_path), *options)
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", f"file:{path}")


def no_sql(*texts: str) -> None:
    for text in texts:
        assert "IntegrityError" not in text and "INSERT INTO" not in text, text


def test_two_client_calls_with_one_id_both_wait_and_the_turn_completes(
    cli: Any, tmp_path: Path
) -> None:
    tools = tmp_path / "client-tools.json"
    tools.write_text(json.dumps(CLIENT_TOOLS))
    calls = [
        {"id": "dup", "name": "pick_color", "arguments": {"prompt": "first"}},
        {"id": "dup", "name": "pick_color", "arguments": {"prompt": "second"}},
    ]
    scripted_agent(cli, tmp_path, [{"tool_calls": calls}, "thanks"], **{"client-tools": str(tools)})

    sent = cli("send", "w", "@a pick two colors", "--json")
    no_sql(sent.stdout, sent.stderr)
    waiting = cli("pending", "w", "--json").json()["pendingToolCalls"]
    ids = [p["toolCallId"] for p in waiting]
    assert [p["toolArgs"]["prompt"] for p in waiting] == ["first", "second"]  # an object, not text
    assert ids[0] == "dup" and ids[1].startswith("dup-")

    cli("respond", "w", ids[0], "--result", '{"color": "teal"}')
    done = cli("respond", "w", ids[1], "--result", '{"color": "plum"}', "--json")
    no_sql(done.stdout, done.stderr)
    assert done.json()["messages"][-1]["content"].endswith("thanks")
    assert cli("pending", "w", "--json").json() == {"pendingToolCalls": []}


def test_an_approved_call_id_reused_in_the_next_turn_asks_and_runs_again(
    cli: Any, tmp_path: Path
) -> None:
    def touch(name: str) -> dict[str, Any]:
        return {
            "tool_calls": [
                {"id": "c1", "name": "shell_cmd", "arguments": {"command": f"touch {name}"}}
            ]
        }

    scripted_agent(cli, tmp_path, [touch("one"), "made one", touch("two"), "made two"])

    first = cli("send", "w", "@a make one", "--json").json()
    (approval,) = first["pendingApprovals"]
    cli("approve", "w", approval["approvalId"], "--decision", "approve")
    assert (tmp_path / "one").exists()

    second = cli("send", "w", "@a make two", "--json")
    no_sql(second.stdout, second.stderr)
    (again,) = second.json()["pendingApprovals"]
    assert again["approvalId"] != approval["approvalId"]
    done = cli("approve", "w", again["approvalId"], "--decision", "approve", "--json").json()
    assert (tmp_path / "two").exists()
    assert done["messages"][-1]["content"].endswith("made two")

    memory = cli("messages", "w", "--agent", "a", "--json").json()["messages"]
    call_ids = [
        c["id"]
        for m in memory
        for c in m["tool_calls"] or ()
        if c["function"]["name"] == "shell_cmd"
    ]
    assert call_ids[0] == "c1" and call_ids[1].startswith("c1-")
    results = [m["tool_call_id"] for m in memory if m["role"] == "tool"]
    assert all(results.count(call_id) == 1 for call_id in call_ids)
