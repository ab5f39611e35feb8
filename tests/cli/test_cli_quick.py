"""``agentworld messages`` answered by the bare SQLite reader (``cli.quick``): the same bytes
as the full command line, for every form it takes; everything else is left to the full path.

Each side runs in a real process on the same SQLite file: ``quick`` alone (exit 99 when it
leaves the command line to the full path), and the typer command tree alone.
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

QUICK_ONLY = (
    "import sys\n"
    "from agentworld.cli import quick\n"
    "from agentworld.cli.entry import place_global_options\n"
    "code = quick.answer(place_global_options(sys.argv[1:]))\n"
    "print(sorted(m for m in ('typer', 'sqlalchemy', 'pydantic') if m in sys.modules), file=sys.stderr)\n"
    "sys.exit(99 if code is None else code)\n"
)
FULL_ONLY = (
    "import sys\n"
    "from agentworld.cli.app import run_command_line\n"
    "from agentworld.cli.entry import place_global_options\n"
    "run_command_line(place_global_options(sys.argv[1:]))\n"
)


def run(program: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", program, *args], capture_output=True, text=True, env=env, timeout=60
    )


@pytest.fixture(scope="module")
def module_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    variables = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    variables.pop("AGENTWORLD_DB", None)
    return variables


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, module_env: dict[str, str]) -> tuple[Path, str]:
    """A world ``Team`` with two chats, made once for the module: an approval asked, answered
    and run, a tool result, markup-like and non-ASCII text, several lines. Returns the file and
    the second chat's id."""
    base = tmp_path_factory.mktemp("talked")
    db_file = base / "agentworld.db"

    def cli(*args: str) -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "agentworld", "--db", f"sqlite:///{db_file}", *args],
            capture_output=True, text=True, env=module_env, timeout=60, check=True,
        )  # fmt: skip
        return json.loads(done.stdout) if "--json" in args else None

    work = base / "work"
    work.mkdir()
    script = base / "a.json"
    call = {"name": "shell_cmd", "arguments": {"command": "touch RELEASED"}}
    script.write_text(json.dumps([{"tool_calls": [call]}, "done [bold]now[/bold] ✓"]))
    cli("world", "create", "Team", "--no-streaming", "--working-dir", str(work))
    cli("agent", "create", "Team", "Ann", "--provider", "scripted", "--model", f"file:{script}")
    cli("agent", "create", "Team", "bob", "--provider", "scripted", "--model", "echo")
    first = cli("send", "Team", "@ann please \\[x] [red]touch[/red] it", "--json")
    (approval,) = first["pendingApprovals"]
    cli("approve", "Team", approval["approvalId"], "--decision", "approve")
    cli("send", "Team", "@bob héllo\nsecond line")
    second = cli("chat", "new", "Team", "--json")["chatId"]
    cli("send", "Team", "@bob only here", "--chat", second)
    cli("chat", "use", "Team", first["chatId"])
    return db_file, str(second)


@pytest.fixture
def env(module_env: dict[str, str]) -> dict[str, str]:
    return module_env


@pytest.fixture
def talked(built: tuple[Path, str], db_url: str) -> str:
    """This test's copy of the module's database, at ``db_url``; the second chat's id."""
    shutil.copyfile(built[0], db_url.removeprefix("sqlite:///"))
    return built[1]


def test_every_form_prints_what_the_full_command_line_prints(
    talked: str, db_url: str, env: dict[str, str]
) -> None:
    forms = [
        ["messages", "Team"],
        ["messages", "team", "--json"],
        ["messages", "TEAM", "--chat", talked],
        ["messages", "Team", f"--chat={talked}", "--json"],
        ["messages", "Team", "--agent", "ann"],
        ["messages", "Team", "--json", "--agent=ANN"],
        ["messages", "Team", "--agent", "Bob", "--chat", talked, "--json"],
        ["messages", "Team", "--agent", "bob"],
        ["--json", "messages", "Team", "--agent", "bob"],
    ]
    for index, form in enumerate(forms):
        for db in (["--db", db_url], [f"--db={db_url}"])[: 2 if index < 2 else 1]:
            quick = run(QUICK_ONLY, [*db, *form], env)
            full = run(FULL_ONLY, [*db, *form], env)
            assert quick.returncode == 0, (form, quick.stderr)  # answered, not left to the full path
            assert quick.stderr == "[]\n", form  # without typer, SQLAlchemy or pydantic
            assert full.returncode == 0, (form, full.stderr)
            assert quick.stdout == full.stdout, form
            assert quick.stdout.strip()
    shown = run(QUICK_ONLY, ["--db", db_url, "messages", "Team"], env).stdout
    assert "approval" in shown and "[red]touch[/red]" in shown and "héllo" in shown
    # $AGENTWORLD_DB names the database as --db does
    by_env = run(QUICK_ONLY, ["messages", "Team", "--json"], {**env, "AGENTWORLD_DB": db_url})
    assert by_env.returncode == 0
    assert by_env.stdout == run(FULL_ONLY, ["--db", db_url, "messages", "Team", "--json"], env).stdout


def test_the_program_answers_through_it(talked: str, cli: Any, db_url: str, env: dict[str, str]) -> None:
    result = cli("messages", "Team", "--json")
    assert result.stdout == run(FULL_ONLY, ["--db", db_url, "messages", "Team", "--json"], env).stdout


LEFT_TO_THE_FULL_PATH = [
    ["messages", "Nowhere"],  # an unknown world: the full path says so
    ["messages", "Team", "--chat", "chat_unknown"],
    ["messages", "Team", "--agent", "nobody"],
    ["messages", "Team", "--help"],
    ["messages", "Team", "--chat"],
    ["messages", "Team", "--json", "--json"],
    ["messages", "Team", "--chat", "--json"],
    ["messages", "Team", "--limit", "3"],
    ["messages", "Team", "--", "x"],
    ["messages"],
    ["messages", "--json", "Team"],
    ["chat", "list", "Team"],
    ["--version"],
]


def test_anything_else_is_left_to_the_full_command_line(
    talked: str, db_url: str, env: dict[str, str]
) -> None:
    for form in LEFT_TO_THE_FULL_PATH:
        quick = run(QUICK_ONLY, ["--db", db_url, *form], env)
        assert (quick.returncode, quick.stdout) == (99, ""), form


def test_an_empty_chat_an_old_schema_and_other_databases_are_left_to_the_full_path(
    talked: str, cli: Any, db_url: str, env: dict[str, str], tmp_path: Path
) -> None:
    cli("world", "create", "Quiet")
    cli("chat", "new", "Quiet")
    assert run(QUICK_ONLY, ["--db", db_url, "messages", "Quiet"], env).returncode == 99
    for db in ("postgresql://nobody@127.0.0.1:1/none", "sqlite://", str(tmp_path / "missing.db")):
        assert run(QUICK_ONLY, ["--db", db, "messages", "Team"], env).returncode == 99
    assert not (tmp_path / "missing.db").exists()
    assert run(QUICK_ONLY, ["messages", "Team"], {**env, "AGENTWORLD_DB": ""}).returncode == 99

    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as raw:
        raw.execute("UPDATE schema_version SET version = version - 1")
    assert run(QUICK_ONLY, ["--db", db_url, "messages", "Team"], env).returncode == 99
