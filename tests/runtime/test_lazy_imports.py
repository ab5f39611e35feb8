"""A process pays for a part only when it uses it.

The tool-call machinery: the policy engine (its pattern compiler), the policy file loader (its
TOML parser) and the approval display are imported by ``runtime.authorizer`` and
``runtime.approvals`` at their first use; the rest of the tool-call path (the authorizer
itself, the batch runner, the executor, the approval flow, streaming, the built-in tools'
implementations) is imported by the turn only when a reply carries tool calls, which keeps a
cold first plain turn short. So does ``redaction`` (its patterns): a plain turn masks nothing
unless something fails (``process_secrets`` loads it then). A fresh process answering a plain
message must load none of it, and one whose agent calls a tool must load what that call needs
(so the check can fail).

Neither loads SQLAlchemy on SQLite: the stores' statements are SQL text run on ``sqlite3``
(``storage.sqlite_direct``), and a database whose schema is current opens without migrations,
the one part that needs SQLAlchemy's DDL.

The command line: each command's module is imported when that command runs (``cli.app``'s
lazy group), and none of them imports a provider SDK, the server, MCP or SQLAlchemy at start-up.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentworld import AgentWorld
from agentworld.cli.common import YOUNG_OBJECTS_PER_COLLECTION

A_TOOL_CALL_NEEDS = (
    "agentworld.policy.engine",
    "agentworld.policy.loader",
    "agentworld.policy.rules",
    "agentworld.runtime.authorizer",
    "agentworld.runtime.approvals",
    "agentworld.runtime.tool_calls",
    "agentworld.tools.executor",
    "agentworld.runtime.hook_dispatch",  # a reply's calls are offered to the hooks
    "agentworld.tools.builtin.files",  # read_file's implementation
    "agentworld.redaction",  # the call's arguments and result are masked
)
TOOL_MACHINERY = (
    *A_TOOL_CALL_NEEDS,
    "agentworld.tools.builtin.shell",  # only when shell_cmd is called
    "agentworld.runtime.streaming",  # only when someone watches the stream
    "agentworld.runtime.client_calls",  # only when a client runs a tool
    "agentworld.approval.display",  # only when a call waits for a person
)

_TURN = """
import asyncio, json, sys
from agentworld import AgentWorld

async def main(db):
    async with AgentWorld(f"sqlite:///{db}") as aw:
        result = await aw.send("w", "@a1 hi", timeout=30)
    loaded = [m for m in MACHINERY if m in sys.modules]
    print(json.dumps({
        "loaded": loaded,
        "said": [m.content for m in result.messages],
        "sqlalchemy": sorted(m for m in sys.modules if m.split(".")[0] == "sqlalchemy"),
    }))

MACHINERY = sys.argv[2].split(",")
asyncio.run(main(sys.argv[1]))
"""


async def _world(db: Path, model: str, workdir: Path) -> None:
    async with AgentWorld(f"sqlite:///{db}") as aw:
        await aw.create_world("w", working_dir=str(workdir))
        await aw.create_agent("w", "a1", provider="scripted", model=model)


def _fresh_turn(tmp_path: Path, model: str) -> dict[str, Any]:
    """Make the world here, then answer one message in a fresh process (as ``agentworld
    send`` does) and say which of the tool machinery that process loaded."""
    asyncio.run(_world(tmp_path / "w.db", model, tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", _TURN, str(tmp_path / "w.db"), ",".join(TOOL_MACHINERY)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_plain_turn_loads_none_of_the_tool_machinery(tmp_path: Path) -> None:
    result = _fresh_turn(tmp_path, "echo")
    assert result["said"][-1] == "echo: @a1 hi"
    assert result["loaded"] == []
    assert result["sqlalchemy"] == []


def test_a_tool_call_loads_it_and_is_authorized(tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("the note")
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"content": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "note.txt"}}]},
                "done",
            ]
        )
    )
    result = _fresh_turn(tmp_path, f"file:{script}")
    assert result["said"][-1] == "done"
    assert result["loaded"] == list(A_TOOL_CALL_NEEDS)
    assert result["sqlalchemy"] == []  # the tool log, the policy's reads: sqlite3 too


_SEND = [sys.executable, "-X", "importtime", "-m", "agentworld", "send", "w", "@a1 hi"]


def _imported(stderr: str) -> set[str]:
    """The modules ``-X importtime`` reports a process importing."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_agentworld_send_on_sqlite_never_imports_sqlalchemy(tmp_path: Path) -> None:
    asyncio.run(_world(tmp_path / "w.db", "echo", tmp_path))
    env = {**os.environ, "AGENTWORLD_DB": f"sqlite:///{tmp_path / 'w.db'}"}
    done = subprocess.run(_SEND, capture_output=True, text=True, timeout=60, check=True, env=env)
    assert "echo: @a1 hi" in done.stdout
    imported = _imported(done.stderr)
    assert "agentworld.storage.sqlite_direct" in imported  # the check sees the storage modules
    assert not {m for m in imported if m.split(".")[0] == "sqlalchemy"}


def test_a_database_to_create_or_upgrade_is_made_by_sqlalchemy(tmp_path: Path) -> None:
    """A new database's tables (and an old one's upgrade) are SQLAlchemy's DDL: opening one
    imports it (so the check above can fail), and the next command opens it without."""
    env = {**os.environ, "AGENTWORLD_DB": f"sqlite:///{tmp_path / 'new.db'}"}
    made = [sys.executable, "-X", "importtime", "-m", "agentworld", "world", "list"]
    first = subprocess.run(made, capture_output=True, text=True, timeout=60, check=True, env=env)
    assert "sqlalchemy.sql.ddl" in _imported(first.stderr)
    again = subprocess.run(made, capture_output=True, text=True, timeout=60, check=True, env=env)
    assert not {m for m in _imported(again.stderr) if m.split(".")[0] == "sqlalchemy"}


_FREEZES = """
import asyncio, gc, json, sys
from agentworld import AgentWorld
from agentworld.cli import common

def collector():
    return {"frozen": gc.get_freeze_count(), "threshold": list(gc.get_threshold())}

async def library(db):
    async with AgentWorld(f"sqlite:///{db}") as aw:
        await aw.send("w", "@a1 hi", timeout=30)
    return collector()

async def command(aw):
    await aw.send("w", "@a1 hi", timeout=30)
    return collector()

default = list(gc.get_threshold())

embedded = asyncio.run(library(sys.argv[1]))
common.state["db"] = f"sqlite:///{sys.argv[1]}"
print(json.dumps({"default": default, "library": embedded, "cli": common.run(command)}))
"""


def test_only_the_cli_sets_the_cycle_collector(tmp_path: Path) -> None:
    """A CLI command freezes what its imports made (``gc.freeze``: objects a full collection
    would walk again in its first turn) and collects young objects less often; the library
    leaves its caller's collector alone, since that process is not ours."""
    asyncio.run(_world(tmp_path / "w.db", "echo", tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", _FREEZES, str(tmp_path / "w.db")],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["library"] == {"frozen": 0, "threshold": seen["default"]}
    assert seen["cli"]["frozen"] > 20_000  # pydantic, typer and our modules, at least
    young, *older = seen["cli"]["threshold"]
    assert young == YOUNG_OBJECTS_PER_COLLECTION > seen["default"][0]
    assert older == seen["default"][1:]


_LOADED_AT_EXIT = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
from agentworld.cli.entry import main
main()
"""

HEAVY = (
    "sqlalchemy", "asyncpg", "openai", "anthropic", "google", "httpx", "httpx2", "mcp",
    "fastapi", "starlette", "uvicorn", "sse_starlette", "prompt_toolkit", "jsonschema",
)  # fmt: skip
"""Packages no command below needs: the provider SDKs and their HTTP, MCP, the server, the
chat session's prompt, SQLAlchemy (a current SQLite database opens on ``sqlite3``)."""


def _loaded(args: list[str], env: dict[str, str]) -> set[str]:
    """The modules a fresh ``agentworld ARGS`` process had loaded when it exited."""
    done = subprocess.run(
        [sys.executable, "-c", _LOADED_AT_EXIT, *args], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


EVERY_COMMAND_LINE = frozenset(
    f"agentworld.cli{name}"
    for name in ("", ".entry", ".app", ".state", ".output", ".common", ".interrupts")
)
"""What any command line may import (``interrupts``: Ctrl-C while a command uses the database)."""


def _commands(loaded: set[str]) -> set[str]:
    """The command modules among ``loaded``: those not every command line imports."""
    return {m for m in loaded if m.startswith("agentworld.cli")} - EVERY_COMMAND_LINE


def test_a_command_line_imports_its_own_command_and_nothing_heavy(tmp_path: Path) -> None:
    asyncio.run(_world(tmp_path / "w.db", "echo", tmp_path))
    env = {**os.environ, "AGENTWORLD_DB": f"sqlite:///{tmp_path / 'w.db'}", "HOME": str(tmp_path)}
    shell = ["--tool", "shell_cmd", "--args", '{"command": "ls && rm x"}']
    expected = {
        ("messages", "w"): {"agentworld.cli.chats"},
        ("approvals", "w"): {"agentworld.cli.approvals", "agentworld.cli.chats"},
        ("policy", "test", *shell): {"agentworld.cli.policy"},
        ("world", "list"): {"agentworld.cli.worlds"},
    }
    for args, commands in expected.items():
        loaded = _loaded(list(args), env)
        assert _commands(loaded) == commands, args
        assert not {m for m in loaded if m.split(".")[0] in HEAVY}, args
        if args[0] != "policy":  # a listing never compiles a policy
            assert not {m for m in loaded if m.startswith(("agentworld.policy", "agentworld.shell."))}
    listing = _loaded(["messages", "w"], env)
    assert "agentworld.storage.sql" in listing  # the check sees what the command imports
    assert not {m for m in listing if m.startswith(("agentworld.runtime", "agentworld.providers"))}


def test_the_help_lists_every_command_without_the_models_or_storage(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    loaded = _loaded(["--help"], env)
    assert "agentworld.cli.worlds" in loaded and "agentworld.cli.talk" in loaded  # their help texts
    for package in (*HEAVY, "pydantic", "agentworld.models", "agentworld.storage", "agentworld.runtime"):
        assert not {m for m in loaded if m == package or m.startswith(f"{package}.")}, package
