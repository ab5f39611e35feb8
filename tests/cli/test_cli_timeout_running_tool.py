"""``send --timeout`` ends the wait; a tool still running then stops with the process, and the
line that says the wait ended names it (README, "send --timeout"): a person must not read "the
work is kept" as "the command I approved finished".

Real ``agentworld`` processes on a real SQLite file, the scripted model and a real shell.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)


def slow_tool_script(tmp_path: Path) -> Path:
    path = tmp_path / "slow.json"
    call = {"name": "shell_cmd", "arguments": {"command": "sleep 3; touch AFTER"}}
    path.write_text(json.dumps([{"tool_calls": [call]}, "finished"]))
    return path


@pytest.mark.in_process_only(
    reason="on Temporal the worker runs the tool and goes on when send stops waiting (README, Running on Temporal)"
)
def test_a_tool_running_when_the_wait_ends_is_named_and_not_run_again(
    cli: Any, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    cli("world", "create", "w", "--no-streaming", "--mode", "yolo", "--working-dir", str(work))
    cli("agent", "create", "w", "s", "--provider", "scripted", "--model", f"file:{slow_tool_script(tmp_path)}")

    stopped = cli("send", "w", "@s go", "--timeout", "1", check=False)

    assert stopped.code == 1
    assert "stopped waiting after 1 s" in stopped.stderr
    assert "1 tool call still running (shell_cmd)" in stopped.stderr
    assert "not run again" in stopped.stderr
    time.sleep(3.5)  # what the command would have needed, had it not been stopped
    assert not (work / "AFTER").exists()

    resumed = cli("resume", "w", "--json")

    logs = cli("tool-logs", "w", "--json").json()
    (entry,) = logs["toolLogs"]
    assert entry["status"] == "interrupted"
    assert not (work / "AFTER").exists()
    assert "finished" in [m["content"] for m in resumed.json()["chats"][0]["messages"]]


def test_a_wait_that_ends_between_tools_names_none(cli: Any, tmp_path: Path, server: Any, script: Any) -> None:
    from agentworld.testing.openai_wire import Reply

    script.by_agent["slow"] = lambda body: Reply.text("late", delay=2.0)
    cli("world", "create", "v", "--no-streaming")
    cli("agent", "create", "v", "slow", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:slow")  # fmt: skip

    stopped = cli("send", "v", "@slow hi", "--timeout", "0.3", check=False)

    assert stopped.code == 1
    assert "stopped waiting" in stopped.stderr
    assert "still running" not in stopped.stderr
    on_workers = "AGENTWORLD_TEMPORAL" in os.environ  # the temporal variant (tests/conftest.py)
    assert ("a worker goes on with the chat's work" in stopped.stderr) is on_workers
    assert ("resume v" in stopped.stderr) is not on_workers
