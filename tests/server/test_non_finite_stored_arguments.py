"""A ``NaN`` or ``Infinity`` that an older version stored in a tool's arguments does not break a
listing: the approvals, the audit log and the tool logs still answer over HTTP and from the
CLI, as strict JSON with the value shown as the word it was (``"NaN"``), and approving such a
call runs nothing (its arguments are refused as the model's would be today)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_harness import LLMScript, Served, make_world, server_env

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec


def strict(text: str) -> Any:
    """``text`` parsed as JSON proper: a bare ``NaN`` or an overflowing number fails the test."""

    def refuse(word: str) -> Any:
        raise AssertionError(f"{word} in {text[:200]!r}")

    return json.loads(text, parse_constant=refuse)


def reads_then_asks(body: dict[str, Any]) -> Reply:
    """Reads notes.txt (runs at once: a tool log) and asks to run a shell line (an approval
    with its audit entry); once the results are back, says the last one."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply.text("done: " + last["content"])
    return Reply.tools(
        ToolCallSpec(name="read_file", arguments='{"path": "notes.txt"}', id="call_read"),
        ToolCallSpec(name="shell_cmd", arguments='{"command": "touch made", "timeout": 5}', id="call_sh"),
    )


def as_an_older_version_stored(db_file: Path, world: str) -> None:
    """Rewrite the stored rows as a version that let ``NaN`` through wrote them."""
    with sqlite3.connect(db_file) as db:
        db.execute(
            "UPDATE pending_calls SET arguments = replace(arguments, '\"timeout\": 5', '\"timeout\": NaN'),"
            " detail = replace(detail, '\"timeout\": 5', '\"timeout\": NaN') WHERE world = ?",
            (world,),
        )
        db.execute(
            "UPDATE audit_log SET arguments = replace(arguments, '\"timeout\": 5', '\"timeout\": NaN')"
            " WHERE world = ?",
            (world,),
        )
        db.execute(
            "UPDATE tool_logs SET input = replace(input, '\"notes.txt\"', '\"notes.txt\", \"limit\": -Infinity')"
            " WHERE world = ?",
            (world,),
        )
        changed = db.execute(
            "SELECT (SELECT count(*) FROM pending_calls WHERE world = ? AND detail LIKE '%NaN%'),"
            " (SELECT count(*) FROM audit_log WHERE world = ? AND arguments LIKE '%NaN%'),"
            " (SELECT count(*) FROM tool_logs WHERE world = ? AND input LIKE '%Infinity%')",
            (world, world, world),
        ).fetchone()
    assert changed == (1, 1, 1)


@pytest.mark.sqlite_only  # rewrites the SQLite file; PostgreSQL never stored a NaN
def test_listings_read_a_nan_stored_by_an_older_version_as_strict_json(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript,
    world_name: str, tmp_path: Path,
) -> None:
    work = tmp_path / world_name
    work.mkdir()
    (work / "notes.txt").write_text("notes")
    chat = make_world(api, world_name, llm, "ops", workingDir=str(work))
    script.by_agent[f"{world_name}/ops"] = reads_then_asks
    sent = api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": "@ops go"})
    assert sent.status_code == 202
    for _ in range(200):
        if api.get(f"/api/worlds/{world_name}/approvals").json()["approvals"]:
            break
        time.sleep(0.05)
    db_file = Path(served.db_url.removeprefix("sqlite:///"))
    as_an_older_version_stored(db_file, world_name)

    base = f"/api/worlds/{world_name}"
    approvals = api.get(f"{base}/approvals")
    audit = api.get(f"{base}/audit")
    logs = api.get(f"{base}/tool-logs")

    assert (approvals.status_code, audit.status_code, logs.status_code) == (200, 200, 200)
    (approval,) = strict(approvals.text)["approvals"]
    assert approval["toolArgs"] == {"command": "touch made", "timeout": "NaN"}
    (request,) = strict(audit.text)["audit"]
    assert request["toolArgs"] == {"command": "touch made", "timeout": "NaN"}
    (log,) = strict(logs.text)["toolLogs"]
    assert log["input"] == {"path": "notes.txt", "limit": "-Infinity"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentworld", "--db", served.db_url, *args],
            env=server_env(served.home), capture_output=True, text=True, timeout=60,
        )

    for command, key, expected in (
        ("approvals", "approvals", approval),
        ("audit", "audit", request),
        ("tool-logs", "toolLogs", log),
    ):
        printed = cli(command, world_name, "--json")
        assert printed.returncode == 0, printed.stderr
        assert strict(printed.stdout)[key] == [expected], command
        shown = cli(command, world_name)
        assert shown.returncode == 0, shown.stderr

    # Approving it runs nothing: the stored arguments are refused as a model's would be now.
    answered = api.post(f"{base}/approvals/{approval['approvalId']}", json={"decision": "approve"})
    assert answered.status_code == 200, answered.text
    results = [m["content"] for m in strict(answered.text)["messages"] if m["role"] == "tool"]
    assert any("NaN is not a JSON number" in r for r in results), results
    assert not (work / "made").exists()


def test_a_body_holding_nan_or_infinity_is_refused_before_any_route_sees_it(
    api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    make_world(api, world_name, llm, "ops")
    base = f"/api/worlds/{world_name}"
    headers = {"Content-Type": "application/json"}
    for path, body, word in (
        (f"{base}/pending-calls/call_x", '{"result": {"n": NaN}}', "NaN is not a JSON number"),
        (f"{base}/policy/test", '{"tool": "shell_cmd", "args": {"command": "ls", "timeout": -Infinity}}',
         "-Infinity is not a JSON number"),
        (f"{base}/policy/test", '{"tool": "shell_cmd", "args": {"command": "ls", "timeout": 1e400}}',
         "the number 1e400 is too large for JSON"),
    ):
        answer = api.post(path, content=body, headers=headers)
        assert answer.status_code == 422, (path, answer.text)
        assert strict(answer.text)["error"] == {"code": "validation_error", "message": f"body: {word}"}
