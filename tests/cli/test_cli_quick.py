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
        ["approvals", "Team"],
        ["approvals", "team", "--json"],
        ["approvals", "Team", "--chat", talked],
        ["approvals", "Team", f"--chat={talked}", "--json"],
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
    waiting = run(QUICK_ONLY, ["--db", db_url, "approvals", "Team"], env).stdout
    assert "rm -rf B" in waiting and "[b]hi[/b]" in waiting and f"--db {db_url}" in waiting
    assert len(json.loads(run(QUICK_ONLY, ["--db", db_url, "approvals", "Team", "--json"], env).stdout)["approvals"]) == 2
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
    ["approvals", "Team", "--grants"],
    ["approvals", "Team", "--revoke", "grant_x"],
    ["approvals", "Team", "--agent", "Cal"],
    ["approvals", "Team", "--chat", "chat_unknown"],
    ["approvals", "Nowhere"],
    ["--version"],
]


def test_anything_else_is_left_to_the_full_command_line(
    talked: str, db_url: str, env: dict[str, str]
) -> None:
    for form in LEFT_TO_THE_FULL_PATH:
        quick = run(QUICK_ONLY, ["--db", db_url, *form], env)
        assert (quick.returncode, quick.stdout) == (99, ""), form


def test_a_world_with_work_to_take_up_is_left_to_the_full_path(
    talked: str, cli: Any, db_url: str, env: dict[str, str]
) -> None:
    """Opening the world's runtime would log a dead process's tool run as interrupted, or
    deny an overdue request: the listing of approvals is then the full path's."""
    approvals = ["--db", db_url, "approvals", "Team", "--json"]
    assert run(QUICK_ONLY, approvals, env).returncode == 0
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as raw:
        raw.execute("UPDATE tool_logs SET status = 'running'")
    assert run(QUICK_ONLY, approvals, env).returncode == 99
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as raw:
        raw.execute("UPDATE tool_logs SET status = 'ok'")
        raw.execute("UPDATE pending_calls SET created_at = '2020-01-01T00:00:00+00:00'")
    assert run(QUICK_ONLY, approvals, env).returncode == 99
    expired = cli("approvals", "Team", "--json").json()  # the full path denies them
    assert expired == {"approvals": []}
    assert run(QUICK_ONLY, approvals, env).stdout == '{\n  "approvals": []\n}\n'


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


def test_a_world_argument_finds_its_stored_spelling_from_the_file(
    talked: str, db_url: str, tmp_path: Path
) -> None:
    """Every command's WORLD argument is looked up here first; None sends it to the facade."""
    from agentworld.cli.quick import stored_world_spelling

    assert stored_world_spelling(db_url, "tEAM") == "Team"
    assert stored_world_spelling(db_url, "Team") == "Team"
    assert stored_world_spelling(db_url, "nobody") == "nobody"  # the command reports it unknown
    for db in ("postgresql://nobody@127.0.0.1:1/none", "sqlite://", f"sqlite:///{tmp_path / 'missing.db'}"):
        assert stored_world_spelling(db, "team") is None
    assert not (tmp_path / "missing.db").exists()
