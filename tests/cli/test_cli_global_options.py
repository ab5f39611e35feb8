"""The command line as a whole (issue 14): ``--db`` checked before anything is written, global
options accepted after the command, ``--version``, shell completion, one-line usage errors,
a bad ``AGENTWORLD_LOG`` that breaks nothing."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentworld.cli.entry import place_global_options
from agentworld.storage.versions import foreign_schema_problem


def _agentworld(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``agentworld ARGS`` with no ``--db`` of the test's own: HOME decides the default."""
    clean = {k: v for k, v in os.environ.items() if k not in ("AGENTWORLD_DB", "AGENTWORLD_LOG")}
    return subprocess.run(
        [sys.executable, "-m", "agentworld", *args],
        capture_output=True,
        text=True,
        env={**clean, "HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200", **(env or {})},
        timeout=60,
    )


# -- the database --------------------------------------------------------------------------------


def test_another_programs_sqlite_file_is_refused_and_left_byte_for_byte(cli: Any, tmp_path: Path) -> None:
    foreign = tmp_path / "their.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)")
        conn.execute("CREATE TABLE messages (body TEXT)")
    before = hashlib.sha256(foreign.read_bytes()).hexdigest()

    result = cli("world", "create", "w", db=str(foreign), check=False)

    assert result.code == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: --db {foreign}: the database belongs to another program (it has tables messages, users "
        "and no agentworld schema); nothing was changed: use a database of its own for agentworld"
    ]
    assert hashlib.sha256(foreign.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("their")) == ["their.db"]


def test_an_empty_file_and_our_own_database_are_not_foreign(cli: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    cli("world", "create", "w", db=str(empty))
    assert [w["name"] for w in cli("world", "list", "--json", db=str(empty)).json()["worlds"]] == ["w"]


def test_foreign_schema_rules() -> None:
    assert foreign_schema_problem([], whole_database=True) is None
    assert foreign_schema_problem(["schema_version", "worlds", "extra"], whole_database=True) is None
    assert foreign_schema_problem(["sqlite_sequence"], whole_database=True) is None
    assert foreign_schema_problem(["users"], whole_database=True) is not None
    # A shared PostgreSQL database: only a table with one of our names is a conflict.
    assert foreign_schema_problem(["users"], whole_database=False) is None
    assert "messages" in (foreign_schema_problem(["users", "messages"], whole_database=False) or "")


def test_a_missing_directory_is_an_error_and_is_not_created(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "x.db"
    result = cli("world", "list", db=str(target), check=False)
    assert result.code == 1 and result.stdout == ""
    assert result.stderr.strip() == f"error: --db: the directory {target.parent} does not exist"
    assert not (tmp_path / "no").exists()


def test_the_default_location_is_created(tmp_path: Path) -> None:
    result = _agentworld("world", "create", "w", "--json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / ".agentworld" / "agentworld.db").is_file()


# -- global options where people type them ------------------------------------------------------


def test_db_after_the_command_and_json_before_it_are_accepted(cli: Any, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    cli("world", "create", "elsewhere", "--db", str(other))
    listed = cli("--json", "world", "list", "--db", f"sqlite:///{other}")
    assert [w["name"] for w in listed.json()["worlds"]] == ["elsewhere"]
    assert cli("world", "list", "--json").json() == {"worlds": []}  # the test's own database


@pytest.mark.parametrize(
    ("args", "placed"),
    [
        (["world", "list", "--db", "x.db"], ["--db", "x.db", "world", "list"]),
        (["world", "list", "--db=x.db", "--json"], ["--db=x.db", "world", "list", "--json"]),
        (["--json", "world", "list"], ["world", "list", "--json"]),
        (["--db", "a.db", "send", "w", "--", "--db"], ["--db", "a.db", "send", "w", "--", "--db"]),
        (["--version"], ["--version"]),
        (["--json"], ["--json"]),
    ],
)
def test_place_global_options(args: list[str], placed: list[str]) -> None:
    assert place_global_options(args) == placed


def test_version(tmp_path: Path) -> None:
    from importlib.metadata import version

    result = _agentworld("--version", home=tmp_path)
    assert (result.returncode, result.stdout.strip()) == (0, f"agentworld {version('agentworld')}")


def test_shell_completion_completes_commands(tmp_path: Path) -> None:
    result = _agentworld(
        home=tmp_path, env={"_AGENTWORLD_COMPLETE": "complete_bash", "COMP_WORDS": "agentworld worl", "COMP_CWORD": "1"}
    )
    assert result.returncode == 0
    assert result.stdout.split() == ["world"]
    # Without a shell named, typer finds it among the process's ancestors (shellingham), which
    # under a test runner's workers sometimes finds none: name it, as typer's own tests do.
    named = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    shown = _agentworld("--show-completion", "bash", home=tmp_path, env=named)
    assert shown.returncode == 0 and "_agentworld_completion" in shown.stdout


def test_a_group_alone_shows_its_help_once(tmp_path: Path) -> None:
    result = _agentworld("world", home=tmp_path)
    assert result.stdout.count("Usage: agentworld world") == 1 and "Traceback" not in result.stderr
    assert result.returncode == 2


def test_a_bad_log_level_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    result = _agentworld("world", "list", "--json", home=tmp_path, env={"AGENTWORLD_LOG": "loud"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("{")
    assert result.stderr.strip() == (
        "warning: AGENTWORLD_LOG='loud' is not a log level (debug, info, warning, error, critical); "
        "logging stays off"
    )
