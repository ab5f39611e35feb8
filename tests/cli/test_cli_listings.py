"""``agentworld messages`` and ``agentworld approvals``, the listings people and scripts run
most: every way of typing the same listing prints the same bytes, stored text is shown as it
was stored, and listing approvals first ends what a stopped process left.

Each command runs as a real process on a copy of one SQLite file made once for the module.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def agentworld(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentworld", *args], capture_output=True, text=True, env=env, timeout=60
    )


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    variables = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    variables.pop("AGENTWORLD_DB", None)
    return variables


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> tuple[Path, str]:
    """A world ``Team`` with two chats, made once for the module: an approval asked, answered
    and run, a tool result, markup-like and non-ASCII text, several lines, and two requests
    waiting. Returns the file and the second chat's id."""
    base = tmp_path_factory.mktemp("talked")
    db_file = base / "agentworld.db"

    def cli(*args: str) -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "agentworld", "--db", f"sqlite:///{db_file}", *args],
            capture_output=True, text=True, env=env, timeout=60, check=True,
        )  # fmt: skip
        return json.loads(done.stdout) if "--json" in args else None

    work = base / "work"
    work.mkdir()
    script = base / "a.json"
    call = {"name": "shell_cmd", "arguments": {"command": "touch RELEASED"}}
    script.write_text(json.dumps([{"tool_calls": [call]}, "done [bold]now[/bold] ✓"]))
    policy = base / "policy.toml"  # a tool that is not the shell asks too: its arguments are shown
    policy.write_text('[[rule]]\ntoolName = "read_file"\ndecision = "ask_user"\npriority = 5\n')
    cli("world", "create", "Team", "--no-streaming", "--working-dir", str(work), "--policy", str(policy))
    cli("agent", "create", "Team", "Ann", "--provider", "scripted", "--model", f"file:{script}")
    cli("agent", "create", "Team", "bob", "--provider", "scripted", "--model", "echo")
    first = cli("send", "Team", "@ann please \\[x] [red]touch[/red] it", "--json")
    (approval,) = first["pendingApprovals"]
    cli("approve", "Team", approval["approvalId"], "--decision", "approve")
    cli("send", "Team", "@bob héllo\nsecond line")
    second = cli("chat", "new", "Team", "--json")["chatId"]
    cli("send", "Team", "@bob only here", "--chat", second)
    for agent, call in (
        ("Cal", {"name": "shell_cmd", "arguments": {"command": "touch A && rm -rf B"}}),
        ("Dee", {"name": "read_file", "arguments": {"path": "[b]hi[/b].txt"}}),
    ):
        asks = base / f"{agent}.json"
        asks.write_text(json.dumps([{"tool_calls": [call]}, "done"]))
        cli("agent", "create", "Team", agent, "--provider", "scripted", "--model", f"file:{asks}")
    cli("send", "Team", "@cal clean up", "--chat", second)
    cli("send", "Team", "@dee write it", "--chat", first["chatId"])
    cli("chat", "use", "Team", first["chatId"])
    return db_file, str(second)


@pytest.fixture
def talked(built: tuple[Path, str], db_url: str) -> str:
    """This test's copy of the module's database, at ``db_url``; the second chat's id."""
    shutil.copyfile(built[0], db_url.removeprefix("sqlite:///"))
    return built[1]


def test_every_spelling_of_a_listing_prints_the_same_bytes(
    talked: str, db_url: str, env: dict[str, str]
) -> None:
    """The world in any case, ``--opt=value`` or ``--opt value``, ``--json`` and ``--db``
    before or after the command, the database named by ``$AGENTWORLD_DB``: one listing. (The
    approvals' text names ``--db`` in the commands that answer them only when it was given.)"""
    by_variable = {**env, "AGENTWORLD_DB": db_url}
    spellings: list[list[tuple[list[str], dict[str, str]]]] = [
        [
            (["--db", db_url, "messages", "Team"], env),
            ([f"--db={db_url}", "messages", "team"], env),
            (["messages", "TEAM", "--db", db_url], env),
            (["messages", "Team"], by_variable),
        ],
        [
            (["--db", db_url, "messages", "Team", "--json"], env),
            (["--db", db_url, "--json", "messages", "team"], env),
            (["messages", "tEAM", "--json"], by_variable),
        ],
        [
            (["--db", db_url, "messages", "Team", "--chat", talked], env),
            (["--db", db_url, "messages", "team", f"--chat={talked}"], env),
        ],
        [
            (["--db", db_url, "messages", "Team", "--agent", "ann", "--json"], env),
            (["--db", db_url, "messages", "Team", "--json", "--agent=ANN"], env),
            (["--db", db_url, "--json", "messages", "team", "--agent", "Ann"], env),
        ],
        [
            (["--db", db_url, "approvals", "Team"], env),
            (["approvals", "team", "--db", db_url], env),
        ],
        [
            (["--db", db_url, "approvals", "Team", "--chat", talked, "--json"], env),
            (["--db", db_url, "--json", "approvals", "team", f"--chat={talked}"], env),
        ],
    ]
    for same in spellings:
        printed = set()
        for args, variables in same:
            done = agentworld(args, variables)
            assert (done.returncode, done.stderr) == (0, ""), args
            assert done.stdout.strip(), args
            printed.add(done.stdout)
        assert len(printed) == 1, same


def test_a_listing_shows_stored_text_as_it_was_stored(talked: str, cli: Any, db_url: str) -> None:
    shown = cli("messages", "Team").stdout
    assert "[red]touch[/red]" in shown and "héllo" in shown and "second line" in shown
    assert "done [bold]now[/bold] ✓" in shown and "approval" in shown
    memory = cli("messages", "Team", "--agent", "ANN", "--json").json()
    assert memory["agent"] == "Ann"  # as the agent was created
    assert [m["role"] for m in memory["messages"]][:2] == ["user", "assistant"]
    other = cli("messages", "Team", "--chat", talked, "--json").json()
    assert other["chatId"] == talked
    assert [m["content"] for m in other["messages"]][:2] == ["@bob only here", "echo: @bob only here"]

    waiting = cli("approvals", "Team").stdout
    assert "rm -rf B" in waiting and "[b]hi[/b]" in waiting
    assert f"--db {db_url}" in waiting  # the commands that answer a request name this database
    listed = cli("approvals", "Team", "--json").json()["approvals"]
    assert sorted(a["agent"] for a in listed) == ["Cal", "Dee"]
    (cal,) = cli("approvals", "Team", "--chat", talked, "--json").json()["approvals"]
    assert cal["agent"] == "Cal"


def test_a_listing_of_something_unknown_is_one_error_line(talked: str, cli: Any) -> None:
    for args, reason in (
        (["messages", "Nowhere"], "world 'Nowhere' not found"),
        (["messages", "Team", "--chat", "chat_unknown"], "chat 'chat_unknown' not found in world 'Team'"),
        (["messages", "Team", "--agent", "nobody"], "agent 'nobody' not found in world 'Team'"),
        (["approvals", "Nowhere"], "world 'Nowhere' not found"),
        (["approvals", "Team", "--chat", "chat_unknown"], "chat 'chat_unknown' not found in world 'Team'"),
    ):
        done = cli(*args, check=False)
        assert (done.code, done.stdout, done.stderr) == (1, "", f"error: {reason}\n"), args


def test_listing_approvals_first_ends_what_a_stopped_process_left(
    talked: str, cli: Any, db_url: str
) -> None:
    """Opening the world's runtime logs a dead process's tool run as interrupted and denies a
    request that waited past the world's approval timeout; the listing shows what is left."""
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as raw:
        raw.execute("UPDATE pending_calls SET created_at = '2020-01-01T00:00:00+00:00'")
    assert cli("approvals", "Team", "--json").json() == {"approvals": []}
    assert cli("approvals", "Team").stdout == "no pending approvals\n"


def test_an_empty_chat_names_the_next_step(talked: str, cli: Any) -> None:
    cli("world", "create", "Quiet")
    cli("chat", "new", "Quiet")
    assert cli("messages", "Quiet").stdout.startswith("no messages yet; the world has no agents")
    cli("agent", "create", "Quiet", "zed", "--provider", "scripted", "--model", "echo")
    assert "start with: agentworld" in cli("messages", "quiet").stdout
