"""Ctrl-C during ``send`` stops the chat's turn (SPEC K3): the command prints what was produced
and exits 130, nothing of the stopped turn runs afterwards, and the next command is not slowed
by it.

Real ``agentworld`` processes — in a pseudo-terminal (pexpect) or given SIGINT — on a real
database, with agents on the loopback OpenAI wire server, whose slow agent takes ``SLOW``
seconds to answer.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)

SLOW = 12.0
"""Seconds the slow agent takes to answer: far longer than a quick question takes."""
QUICK = 8.0
"""A quick question must be answered within this (a command's start-up included, on a busy
machine, on PostgreSQL): behind the stopped question it would take more than ``SLOW``."""
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r")
STOP_NOTE = "human stopped the agents' work in this chat."


def team(cli: Any, server: OpenAIWireServer, script: Any) -> None:
    """World ``w``: ``slow`` answers after ``SLOW`` seconds, ``quick`` at once."""
    script.by_agent["slow"] = lambda body: Reply.text("too late", delay=SLOW)
    cli("world", "create", "w")
    for name in ("slow", "quick"):
        cli("agent", "create", "w", name, "--provider", "openai", "--model", "m",
            "--base-url", server.base_url, "--system-prompt", f"agent:{name}")  # fmt: skip


def asked(server: OpenAIWireServer, agent: str) -> int:
    """How many model requests ``agent`` made."""
    return sum(1 for r in server.requests if r["messages"][0]["content"] == f"agent:{agent}")


def until(condition: Callable[[], bool], *, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition never held")
        time.sleep(0.05)


def environment(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1", "NO_COLOR": "1", "TERM": "xterm"}
    for name in ("AGENTWORLD_DB", "OPENAI_API_KEY"):
        env.pop(name, None)
    return env


def start(db_url: str, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    """``agentworld --db DB ARGS`` running, its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", db_url, *args],
        env=environment(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def contents(cli: Any, *args: str) -> list[str]:
    return [m["content"] for m in cli("messages", "w", *args, "--json").json()["messages"]]


def a_quick_question_is_not_slowed(cli: Any, *chat: str) -> None:
    """``send`` to ``quick`` returns with its answer as fast as it would alone."""
    began = time.monotonic()
    sent = cli("send", "w", "@quick are you there?", *chat, "--json").json()
    took = time.monotonic() - began
    assert [m["content"] for m in sent["messages"] if m["role"] == "assistant"] == [
        "quick heard: @quick are you there?"
    ]
    assert took < QUICK, f"the quick question took {took:.1f} s"


def nothing_of_the_stopped_turn_runs(cli: Any, server: OpenAIWireServer, asked_since: float) -> None:
    """Past the time the slow answer would have come: it never came, ``resume`` finds no work
    left, and the slow agent was never asked again."""
    time.sleep(max(0.0, asked_since + SLOW + 0.5 - time.monotonic()))
    requests = asked(server, "slow")
    assert cli("resume", "w", "--json").json()["chats"] == []
    assert "too late" not in contents(cli)
    assert asked(server, "slow") == requests == 1


def test_ctrl_c_in_a_terminal_stops_the_slow_question_and_the_next_send_is_not_slowed(
    cli: Any, server: OpenAIWireServer, script: Any, db_url: str, tmp_path: Path
) -> None:
    team(cli, server, script)
    child = pexpect.spawn(
        sys.executable, ["-m", "agentworld", "--db", db_url, "send", "w", "@slow take your time"],
        env=environment(tmp_path), encoding="utf-8", dimensions=(50, 200), timeout=30,
    )  # fmt: skip
    try:
        until(lambda: asked(server, "slow") == 1)
        asked_at = time.monotonic()
        child.sendcontrol("c")
        child.expect(pexpect.EOF, timeout=SLOW / 2)
    finally:
        child.close(force=True)
    assert child.exitstatus == 130
    shown = ANSI.sub("", child.before or "")
    assert STOP_NOTE in shown
    assert "error: interrupted: the chat's turn was stopped" in shown
    assert "too late" not in shown

    a_quick_question_is_not_slowed(cli)
    nothing_of_the_stopped_turn_runs(cli, server, asked_at)
    assert contents(cli) == [
        "@slow take your time", STOP_NOTE, "@quick are you there?", "quick heard: @quick are you there?"
    ]


@pytest.mark.both_backends
def test_sigint_stops_the_turn_and_json_shows_what_was_produced_and_what_the_stop_did(
    cli: Any, server: OpenAIWireServer, script: Any, db_url: str, tmp_path: Path
) -> None:
    team(cli, server, script)
    proc = start(db_url, tmp_path, "send", "w", "@slow take your time", "--json")
    until(lambda: asked(server, "slow") == 1)
    asked_at = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=SLOW / 2)

    assert proc.returncode == 130, err
    document = json.loads(out)  # exactly one document
    assert [(m["role"], m["content"]) for m in document["messages"]] == [
        ("user", "@slow take your time"), ("system", STOP_NOTE)
    ]
    assert document["interrupted"] == {
        "stopped": True, "droppedSteps": 1, "interruptedCalls": [], "killedCalls": [], "callsNotRun": [],
    }
    assert document["pendingApprovals"] == document["pendingQuestions"] == []
    assert err.splitlines()[-1] == "error: interrupted: the chat's turn was stopped (1 queued step dropped)"

    other = cli("chat", "new", "w", "--json").json()["chatId"]
    a_quick_question_is_not_slowed(cli, "--chat", other)
    a_quick_question_is_not_slowed(cli)
    nothing_of_the_stopped_turn_runs(cli, server, asked_at)


@pytest.mark.sqlite_only  # its moments are seen as the SQLite file opened
def test_ctrl_c_at_any_moment_of_start_up_leaves_nothing_to_run(
    cli: Any, server: OpenAIWireServer, script: Any, db_url: str, tmp_path: Path
) -> None:
    """Early, the message is not stored yet and the command just ends; later, what was stored
    is stopped. Either way the status is 130 and nothing of that turn runs afterwards."""
    team(cli, server, script)
    database = Path(db_url.removeprefix("sqlite:///")).resolve()
    for after in (0.0, 0.05, 0.1, 0.2, 0.35, 0.6, 1.0):
        before = asked(server, "slow")
        proc = start(db_url, tmp_path, "send", "w", f"@slow question {after}")
        until(lambda pid=proc.pid: opened(pid, database))  # its start-up has begun to read the world
        time.sleep(after)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=SLOW / 2)
        assert proc.returncode == 130, err
        assert err.splitlines()[-1].startswith("error: interrupted"), err
        said = contents(cli)
        if f"@slow question {after}" in said:  # stored: its turn was stopped
            assert said[-2:] == [f"@slow question {after}", STOP_NOTE]
        assert asked(server, "slow") <= before + 1
    asked_at = time.monotonic()
    requests = asked(server, "slow")

    a_quick_question_is_not_slowed(cli)
    time.sleep(max(0.0, asked_at + SLOW + 0.5 - time.monotonic()))
    assert cli("resume", "w", "--json").json()["chats"] == []
    assert "too late" not in contents(cli)
    assert asked(server, "slow") == requests


def opened(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open."""
    try:
        return any(os.path.realpath(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


@pytest.mark.sqlite_only  # the database is held with a SQLite lock
def test_a_second_ctrl_c_exits_at_once_while_the_stop_waits_for_the_database(
    cli: Any, server: OpenAIWireServer, script: Any, db_url: str, tmp_path: Path
) -> None:
    team(cli, server, script)
    proc = start(db_url, tmp_path, "send", "w", "@slow take your time")
    until(lambda: asked(server, "slow") == 1)
    database = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        database.execute("BEGIN IMMEDIATE")  # another writer holds the file: the stop must wait
        proc.send_signal(signal.SIGINT)
        time.sleep(1.0)
        assert proc.poll() is None  # still stopping
        second = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=5)
        exited_after = time.monotonic() - second
    finally:
        database.execute("ROLLBACK")
        database.close()
        if proc.poll() is None:
            proc.kill()

    assert proc.returncode == 130
    assert exited_after < 2.0
    assert "note: stopping the chat's turn (Ctrl-C again to exit at once)" in err
    assert err.splitlines()[-1] == "error: interrupted"


@pytest.mark.sqlite_only  # the database is held with a SQLite lock
def test_one_ctrl_c_ends_the_command_in_bounded_time_when_the_database_does_not_answer(
    cli: Any, server: OpenAIWireServer, script: Any, db_url: str, tmp_path: Path
) -> None:
    from agentworld.cli.interrupts import FINISH_SECONDS

    team(cli, server, script)
    proc = start(db_url, tmp_path, "send", "w", "@slow take your time")
    until(lambda: asked(server, "slow") == 1)
    database = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        database.execute("BEGIN IMMEDIATE")
        pressed = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=FINISH_SECONDS + 10)
        took = time.monotonic() - pressed
    finally:
        database.execute("ROLLBACK")
        database.close()
        if proc.poll() is None:
            proc.kill()

    assert proc.returncode == 130
    assert took < FINISH_SECONDS + 3
    assert f"did not finish within {FINISH_SECONDS:g} s of Ctrl-C" in err.splitlines()[-1]
