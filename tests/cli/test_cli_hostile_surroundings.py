"""What the command line does when what surrounds it is broken or odd: a damaged database, an
output that cannot be written or is closed, a closed input, a byte-order mark, an empty or
repeated ``--db``, option values that are not quite JSON. Each is one ``error:`` line and a
non-zero exit (SPEC §3) — never a traceback, never a silent exit 0, never the wrong database.

Real ``agentworld`` processes on real SQLite files, some damaged on purpose.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def agentworld(
    *args: str, home: Path, stdin: Any = None, shell_tail: str = "", input_bytes: bytes | None = None
) -> subprocess.CompletedProcess[str]:
    """``agentworld ARGS`` as a user runs it; ``shell_tail`` adds shell redirections (``1>&-``)."""
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("AGENTWORLD_DB", None)
    if shell_tail:
        line = " ".join(json.dumps(word) for word in [sys.executable, "-m", "agentworld", *args])
        return subprocess.run(
            ["sh", "-c", f"{line} {shell_tail}"], capture_output=True, text=True, env=env, timeout=60
        )
    if input_bytes is not None:
        done = subprocess.run(
            [sys.executable, "-m", "agentworld", *args], input=input_bytes, capture_output=True,
            env=env, timeout=60,
        )  # fmt: skip
        return subprocess.CompletedProcess(
            done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
        )
    return subprocess.run(
        [sys.executable, "-m", "agentworld", *args], capture_output=True, text=True, env=env,
        timeout=60, stdin=stdin,
    )  # fmt: skip


def one_error_line(done: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def filled(tmp_path: Path, cli: Any, db_url: str) -> Path:
    """A database with a world ``team``, an echoing agent and a few exchanges."""
    cli("world", "create", "team")
    cli("agent", "create", "team", "a", "--provider", "scripted", "--model", "echo")
    for n in range(4):
        cli("send", "team", f"@a hello {n} " + "x" * 3000)
    return Path(db_url.removeprefix("sqlite:///"))


def damaged_copy(source: Path, target: Path) -> Path:
    data = bytearray(source.read_bytes())
    for index in range(4096, len(data), 97):
        data[index] = 0xAB
    target.write_bytes(bytes(data))
    return target


@pytest.mark.parametrize(
    "command", [("messages", "team"), ("approvals", "team"), ("world", "list"), ("chat", "list", "team")]
)
def test_a_database_damaged_throughout_is_said_to_be_damaged(
    filled: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    damaged = damaged_copy(filled, tmp_path / "damaged.db")

    done = agentworld("--db", f"sqlite:///{damaged}", *command, home=tmp_path)

    one_error_line(done, 1, "damaged")
    assert "unexpected" not in done.stderr


@pytest.mark.parametrize("command", [("messages", "team"), ("world", "list"), ("approvals", "team")])
def test_a_stored_value_that_cannot_be_read_is_said_to_be_damaged(
    filled: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    with sqlite3.connect(filled) as conn:
        conn.execute("UPDATE worlds SET config = CAST('{bad' AS TEXT)")

    done = agentworld("--db", f"sqlite:///{filled}", *command, home=tmp_path)

    one_error_line(done, 1, "database damaged", str(filled))


@pytest.mark.parametrize(
    "command",
    [("messages", "team"), ("messages", "team", "--json"), ("approvals", "team"), ("chat", "list", "team")],
)
def test_output_that_cannot_be_written_is_one_line_not_a_traceback(
    filled: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    done = agentworld("--db", f"sqlite:///{filled}", *command, home=tmp_path, shell_tail=">/dev/full")

    one_error_line(done, 1, "cannot write the output", "No space left on device")


@pytest.mark.parametrize("command", [("messages", "team"), ("chat", "list", "team"), ("world", "list")])
def test_a_closed_standard_output_is_refused_not_a_silent_success(
    filled: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    done = agentworld("--db", f"sqlite:///{filled}", *command, home=tmp_path, shell_tail="1>&-")

    one_error_line(done, 1, "standard output is closed")


def test_a_closed_standard_input_for_dash_is_a_usage_error(filled: Path, tmp_path: Path) -> None:
    done = agentworld("--db", f"sqlite:///{filled}", "send", "team", "-", home=tmp_path, shell_tail="<&-")

    one_error_line(done, 2, "standard input is closed")


def test_a_byte_order_mark_does_not_hide_the_leading_mention(cli: Any, filled: Path, tmp_path: Path) -> None:
    piped = agentworld(
        "--db", f"sqlite:///{filled}", "send", "team", "-", "--json", home=tmp_path,
        input_bytes=b"\xef\xbb\xbf@a from a pipe",
    )  # fmt: skip
    note = tmp_path / "note.md"
    note.write_bytes(b"\xef\xbb\xbf@a from a file\r\n")
    filed = cli("send", "team", "--file", str(note), "--json")

    for done in (piped.stdout, filed.stdout):
        contents = [m["content"] for m in json.loads(done)["messages"]]
        assert not any(c.startswith("\ufeff") for c in contents)
        assert any(c.startswith("echo: @a from a") for c in contents), contents


def test_an_empty_db_never_means_the_default_database(tmp_path: Path) -> None:
    for command in (("world", "list"), ("messages", "team")):
        done = agentworld("--db", "", *command, home=tmp_path)

        one_error_line(done, 2, "--db is empty")
    assert not (tmp_path / ".agentworld").exists()


def test_db_without_a_value_is_a_usage_error(tmp_path: Path) -> None:
    for args in (("world", "list", "--db"), ("--db",)):
        one_error_line(agentworld(*args, home=tmp_path), 2, "--db needs a value")
    assert not (tmp_path / ".agentworld").exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ('{"a": ' + "[" * 10000 + "]" * 10000 + "}", ("--args", "nested too deeply")),
        ('{"command": "ls", "x": NaN}', ("--args", "NaN is not a JSON number")),
        ('{"command": "ls", "x": 1e999}', ("--args", "too large")),
    ],
)
def test_policy_test_args_must_be_strict_json(tmp_path: Path, args: str, words: tuple[str, ...]) -> None:
    done = agentworld("policy", "test", "--tool", "shell_cmd", "--args", args, home=tmp_path)

    one_error_line(done, 1, *words)


@pytest.mark.parametrize(("option", "words"), [(("--tool", ""), "--tool is empty"), (("--tool", "x", "--server", ""), "--server is empty")])
def test_policy_test_refuses_empty_names(tmp_path: Path, option: tuple[str, ...], words: str) -> None:
    done = agentworld("policy", "test", *option, home=tmp_path)

    one_error_line(done, 2, words)


def test_grants_of_an_unknown_chat_is_an_error(cli: Any, filled: Path) -> None:
    done = cli("approvals", "team", "--grants", "--chat", "chat_nope", check=False)

    assert done.code == 1 and "chat_nope" in done.stderr


def test_a_denial_cannot_be_remembered(cli: Any, filled: Path) -> None:
    done = cli("approve", "team", "approval_x", "--decision", "deny", "--scope", "always", check=False)

    assert done.code == 2
    assert "a denial is for this call only" in done.stderr
