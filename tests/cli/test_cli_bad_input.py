"""Bad input at the command line (issue 14): one line on stderr naming what is wrong (the flag,
not the model's field), nothing on stdout, never a traceback, and nothing stored.

The table runs each command in a real ``agentworld`` process against a fresh SQLite file. Rows
marked ``WORLD`` first create world ``w`` with one scripted agent ``a``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

WORLD = True
FILE = str(Path(__file__))
"""A path that exists and is a file, not a directory."""

BAD_INPUT: list[tuple[bool, tuple[str, ...], int, str]] = [
    # -- the command line itself: exit 2 ------------------------------------------------------
    (False, ("world", "create", "w", "--turn-limit", "abc"), 2, "--turn-limit: 'abc' is not an integer"),
    (False, ("world", "create", "w", "--turn-limit", "0"), 2, "--turn-limit must be ≥ 1"),
    (False, ("world", "create", "w", "--turn-limit=-1"), 2, "--turn-limit must be ≥ 1"),
    (False, ("world", "create", "w", "--turn-limit", "100000"), 2, "--turn-limit must be ≤ 10000"),
    (False, ("world", "create", "w", "--max-iterations", "0"), 2, "--max-iterations must be ≥ 1"),
    (False, ("world", "create", "w", "--approval-timeout", "inf"), 2, "--approval-timeout must be a finite number, not 'inf'"),
    (False, ("world", "create", "w", "--approval-timeout", "nan"), 2, "--approval-timeout must be a finite number, not 'nan'"),
    (False, ("world", "create", "w", "--approval-timeout", "1e400"), 2, "--approval-timeout must be a finite number"),
    (False, ("world", "create", "w", "--approval-timeout=-1"), 2, "--approval-timeout must be > 0"),
    (False, ("world", "create", "w", "--approval-timeout", "1e15"), 2, "--approval-timeout must be ≤ 31536000"),
    (False, ("world", "create", "w", "--approval-timeout", "soon"), 2, "--approval-timeout: 'soon' is not a number"),
    (False, ("world", "create", "w", "--bogus"), 2, "no such option: --bogus"),
    (False, ("world", "create"), 2, "missing argument"),
    (False, ("mesages", "w"), 2, "no such command 'mesages'. Did you mean 'messages', 'message', 'usage'?"),
    (False, ("world", "lst"), 2, "no such command 'lst'. Did you mean 'list'?"),
    (False, ("nosuch",), 2, "no such command 'nosuch'"),
    (WORLD, ("agent", "create", "w", "b", "--provider", "scripted", "--model", "echo", "--max-tokens", "1e20"), 2,
     "--max-tokens: '1e20' is not an integer"),
    (WORLD, ("agent", "create", "w", "b", "--provider", "scripted", "--model", "echo", "--max-tokens", "0"), 2,
     "--max-tokens must be ≥ 1"),
    (WORLD, ("agent", "create", "w", "b", "--provider", "scripted", "--model", "echo", "--max-tokens", "100000000000000"), 2,
     "--max-tokens must be ≤ 1000000"),
    (WORLD, ("agent", "create", "w", "b", "--provider", "scripted", "--model", "echo", "--temperature", "nan"), 2,
     "--temperature must be a finite number, not 'nan'"),
    (WORLD, ("agent", "create", "w", "b", "--provider", "scripted", "--model", "echo", "--temperature", "2.5"), 2,
     "--temperature must be ≤ 2"),
    (WORLD, ("agent", "create", "w", "b", "--provider", "scripted", "--model", "echo", "--temperature=-0.1"), 2,
     "--temperature must be ≥ 0"),
    (WORLD, ("agent", "update", "w", "a", "--temperature", "inf"), 2, "--temperature must be a finite number"),
    (WORLD, ("agent", "create", "w", "b", "--provider", "nope", "--model", "m"), 2, "--provider: unknown provider 'nope'"),
    (WORLD, ("respond", "w", "call_x", "--result", "{}", "--timeout=-1"), 2, "--timeout must be > 0"),
    (WORLD, ("respond", "w", "call_x", "--result", "{}", "--timeout", "nan"), 2, "--timeout must be a finite number"),
    (False, ("policy", "test", "--tool", "shell_cmd", "--mode", "wild"), 2, "--mode must be one of"),
    # -- names (SPEC R2): one rule, any case --------------------------------------------------
    (False, ("world", "create", "bad name"), 1, "invalid name 'bad name'"),
    (False, ("world", "create", "w\n"), 1, "invalid name 'w\\n'"),
    (WORLD, ("world", "create", "W"), 1, "world 'w' already exists (names are unique regardless of case)"),
    (WORLD, ("agent", "create", "w", "A", "--provider", "scripted", "--model", "echo"), 1, "agent 'a' already exists"),
    *(
        (WORLD, ("agent", "create", "w", name, "--provider", "scripted", "--model", "echo"), 1,
         f"invalid name '{name}': it is reserved")
        for name in ("human", "HUMAN", "User", "you", "system", "World")
    ),
    (False, ("world", "create", "w", "--main-agent", "bob"), 1, "--main-agent: a new world has no agents yet"),
    (WORLD, ("world", "update", "w", "--main-agent", "bob"), 1, "--main-agent: world 'w' has no agent 'bob' (agents: a)"),
    # -- settings checked when they are set, not at the next send ------------------------------
    (False, ("world", "create", "w", "--working-dir", FILE), 1, f"--working-dir: {FILE} is not a directory"),
    (False, ("world", "create", "w", "--working-dir", "/no/such/dir"), 1, "--working-dir: /no/such/dir does not exist"),
    (False, ("world", "create", "w", "--policy", "/no/such.toml"), 1, "--policy: /no/such.toml does not exist"),
    (False, ("world", "create", "w", "--mcp-config", "/no/such.json"), 1, "cannot read --mcp-config file /no/such.json"),
    (False, ("world", "create", "w", "--client-tools", FILE), 1, f"--client-tools file {FILE} is not valid JSON"),
    (False, ("world", "create", "w", "--allowed-tool", "shel_cmd"), 1, "--allowed-tool: 'shel_cmd' is not a tool of this world"),
    (False, ("world", "create", "w", "--excluded-tool", "nope__x"), 1, "--excluded-tool: 'nope__x' is not a tool of this world"),
    (False, ("world", "create", "w", "--mode", "wild"), 2, "--mode must be one of default, auto_edit, yolo"),
    (False, ("world", "create", "w", "--tool-env", "LD_PRELOAD"), 1, "--tool-env: LD_PRELOAD changes how"),
    (False, ("world", "create", "w", "--hook", "no_such_hook_module:on_event"), 1, "the module must be importable"),
    (False, ("world", "create", "w", "--hook", "no_colon"), 1, "must look like 'package.module:function'"),
    (WORLD, ("agent", "create", "w", "b", "--provider", "scripted", "--model", "nosuch"), 1, "--model: scripted model 'nosuch'"),
    (WORLD, ("agent", "create", "w", "b", "--provider", "openai-compatible", "--model", "m"), 1,
     "--base-url is required for provider 'openai-compatible'"),
    (WORLD, ("agent", "create", "w", "b", "--provider", "openai", "--model", "m", "--base-url", "notaurl"), 1,
     "--base-url: 'notaurl' is not an http:// or https:// URL"),
    (WORLD, ("agent", "create", "w", "b", "--provider", "openai", "--model", "m", "--base-url", "ftp://host/v1"), 1,
     "--base-url: 'ftp://host/v1' is not an http:// or https:// URL"),
    (WORLD, ("agent", "update", "w", "a", "--provider", "openai", "--base-url", "http://host:99999"), 1,
     "--base-url: 'http://host:99999' has an invalid port"),
    (WORLD, ("agent", "update", "w", "a", "--provider", "openai-compatible"), 1, "--base-url is required"),
    # -- unknown things ----------------------------------------------------------------------
    (False, ("world", "show", "nope"), 1, "world 'nope' not found"),
    (WORLD, ("agent", "show", "w", "ghost"), 1, "agent 'ghost' not found in world 'w'"),
    (WORLD, ("agent", "delete", "w", "ghost"), 1, "agent 'ghost' not found in world 'w'"),
    (False, ("tools", "nope"), 1, "world 'nope' not found"),
    (False, ("policy", "list", "nope"), 1, "world 'nope' not found"),
    (False, ("policy", "test", "--tool", "shell_cmd", "--args", "nope"), 1, "--args is not valid JSON"),
    # -- the database ------------------------------------------------------------------------
    *(
        (False, ("world", "list", "--db", url), 1, "--db: an in-memory SQLite database saves nothing")
        for url in ("sqlite://", "sqlite:///", "sqlite:///:memory:")
    ),
    (False, ("world", "list", "--db", "/no/such/dir/x.db"), 1, "--db: the directory /no/such/dir does not exist"),
    (False, ("world", "list", "--db", "sqlite:////tmp"), 1, "--db: /tmp is a directory"),
    (False, ("world", "list", "--db", "mysql://h/db"), 1, "unsupported database URL scheme 'mysql'"),
    # a PostgreSQL server that is not there: its address in one line, never the password
    (False, ("world", "list", "--db", "postgresql://u:pw@127.0.0.1:1/db"), 1,
     "cannot reach the database server at 127.0.0.1:1/db: connection refused"),
    (WORLD, ("agent", "update", "w", "a", "--provider", "openai", "--base-url", "http://[::1"), 1,
     "--base-url: 'http://[::1' is not a URL (its host is malformed)"),
]


def _id(row: tuple[bool, tuple[str, ...], int, str]) -> str:
    return " ".join(row[1]).replace("\n", "\\n")[:80]


@pytest.fixture(scope="module")
def world_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with world ``w`` and its agent ``a``, made once and copied for each row."""
    path = tmp_path_factory.mktemp("template") / "agentworld.db"
    for args in (
        ("world", "create", "w"),
        ("agent", "create", "w", "a", "--provider", "scripted", "--model", "echo"),
    ):
        subprocess.run(
            [sys.executable, "-m", "agentworld", "--db", str(path), *args],
            check=True, capture_output=True, env={**os.environ, "HOME": str(path.parent)},
        )  # fmt: skip
    return path


@pytest.mark.parametrize(("needs_world", "args", "code", "message"), BAD_INPUT, ids=[_id(r) for r in BAD_INPUT])
def test_bad_input_is_one_line_naming_the_problem(
    cli: Any, world_db: Path, tmp_path: Path, needs_world: bool, args: tuple[str, ...], code: int, message: str
) -> None:
    if needs_world:
        for file in world_db.parent.glob("agentworld.db*"):
            shutil.copy(file, tmp_path / file.name)  # the file the ``cli`` fixture uses

    result = cli(*args, check=False)

    assert_one_line_error(result, message, code=code)
    if needs_world:  # nothing stored, nothing changed
        agents = cli("agent", "list", "w", "--json").json()["agents"]
        assert [(a["name"], a["provider"], a["temperature"], a["baseUrl"]) for a in agents] == [
            ("a", "scripted", None, None)
        ]
    else:
        assert cli("world", "list", "--json").json() == {"worlds": []}


def assert_one_line_error(result: Any, message: str, *, code: int) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert message in lines[0], lines[0]
    assert result.code == code, (result.code, lines[0])
