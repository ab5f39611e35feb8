"""Bytes that are not UTF-8 on the command line arrive as lone surrogates (``surrogateescape``),
which no text holds: stored, they broke every later listing (``world list --json``) and the
HTTP event stream of the world. Settings and messages holding one are refused in one line,
and nothing is stored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _agentworld(db: str, *args: str | bytes) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", db, *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_undecodable_bytes_in_a_setting_or_a_message_are_refused(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'w.db'}"
    assert _agentworld(db, "world", "create", "w").returncode == 0
    assert _agentworld(db, "agent", "create", "w", "a1", "--provider", "scripted", "--model", "echo").returncode == 0

    setting = _agentworld(db, "world", "update", "w", "--description", b"bad \xff")
    assert setting.returncode == 1
    assert setting.stderr.startswith("error: ") and "description: holds a lone surrogate" in setting.stderr
    message = _agentworld(db, "send", "w", b"@a1 hi \xff")
    assert message.returncode == 1
    assert message.stderr.startswith("error: text: holds a lone surrogate")
    # A NUL (read from standard input: argv cannot hold one) is refused the same way.
    nul = subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", db, "send", "w", "-"],
        input="@a1 hi\x00there", capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert nul.returncode == 1
    assert nul.stderr.startswith("error: text: holds a NUL character") and nul.stderr.count("\n") == 1

    listed = _agentworld(db, "world", "show", "w", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout).get("description") in (None, "")
    transcript = _agentworld(db, "messages", "w", "--json")
    assert transcript.returncode == 0, transcript.stderr
    assert json.loads(transcript.stdout)["messages"] == []
