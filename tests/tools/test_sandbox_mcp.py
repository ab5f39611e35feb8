"""Stdio MCP servers run in the world's sandbox (SPEC C2) unless their entry says
``"sandbox": false``: the real test server (tests/support/mcp_test_server.py) under real
bubblewrap, writing real files."""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentworld.errors import InvalidInputError
from agentworld.tools.mcp import MCPClients
from agentworld.tools.mcp_config import MCPServerConfig, parse_mcp_config
from agentworld.tools.registry import ToolContext
from agentworld.tools.sandbox import (
    BWRAP_VARIABLE,
    SandboxStatus,
    bubblewrap_problem,
    sandbox_status,
)

SERVER_SCRIPT = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")


def server(name: str, *, sandbox: bool = True) -> MCPServerConfig:
    return MCPServerConfig(name, command=sys.executable, args=(SERVER_SCRIPT,), sandbox=sandbox)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    (tmp_path / "outside").mkdir()
    return tmp_path / "work"


def context(work: Path) -> ToolContext:
    return ToolContext(world="w", chat_id="c", agent="a", working_dir=str(work))


async def write_marker(clients: MCPClients, name: str, path: Path, work: Path) -> None:
    tool = next(t for t in await clients.tools() if t.name == f"{name}__write_marker")
    assert tool.run is not None
    await tool.run({"path": str(path)}, context(work))


async def test_a_contained_server_writes_in_the_working_directory_and_nowhere_else(work: Path) -> None:
    errors: list[str] = []

    async def report(name: str, exc: Exception) -> None:
        errors.append(str(exc))

    status = sandbox_status("on", "deny", str(work))
    async with MCPClients([server("box")], containment=status, on_error=report) as clients:
        await write_marker(clients, "box", work / "inside", work)
        with pytest.raises(Exception, match="Error executing tool write_marker"):
            await write_marker(clients, "box", work.parent / "outside" / "f", work)
        tools = await clients.tools()
        pid = next(t for t in tools if t.name == "box__pid")
        assert pid.run is not None
        assert (await pid.run({}, context(work)))["result"] < 10  # its own PID namespace, under bwrap's init
    assert errors == []
    assert (work / "inside").read_text() == "marker\n"
    assert not (work.parent / "outside" / "f").exists()
    assert all(tool.uncontained is None for tool in tools)


async def test_a_server_marked_sandbox_false_runs_outside_and_its_tools_say_so(work: Path) -> None:
    status = sandbox_status("on", "deny", str(work))
    async with MCPClients([server("free", sandbox=False)], containment=status) as clients:
        await write_marker(clients, "free", work.parent / "outside" / "f", work)
        tools = await clients.tools()
    assert (work.parent / "outside" / "f").read_text() == "marker\n"
    assert {tool.uncontained for tool in tools} == {'its MCP server is configured "sandbox": false'}
    shown = context(work).containment(tools[0])
    assert not shown.active and shown.to_json()["active"] is False
    assert shown.describe().startswith('NOT sandboxed (its MCP server is configured "sandbox": false)')


@pytest.fixture
def no_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(BWRAP_VARIABLE, "/nonexistent/bwrap")
    bubblewrap_problem.cache_clear()
    try:
        yield
    finally:
        monkeypatch.delenv(BWRAP_VARIABLE)
        bubblewrap_problem.cache_clear()


@pytest.mark.usefixtures("no_bubblewrap")
async def test_with_sandbox_on_and_none_to_be_had_a_server_does_not_start(work: Path) -> None:
    errors: list[str] = []

    async def report(name: str, exc: Exception) -> None:
        errors.append(str(exc))

    status: SandboxStatus = sandbox_status("on", "deny", str(work))
    assert status.refuses
    async with MCPClients([server("box")], containment=status, on_error=report) as clients:
        assert await clients.tools() == []
    (error,) = errors
    assert "could not start" in error and 'sandbox setting is "on"' in error


def test_the_sandbox_key_is_checked_in_the_mcp_config() -> None:
    (entry,) = parse_mcp_config({"mcpServers": {"s": {"command": "x", "sandbox": False}}})
    assert entry.sandbox is False
    (default,) = parse_mcp_config({"mcpServers": {"s": {"command": "x"}}})
    assert default.sandbox is True
    with pytest.raises(InvalidInputError, match="sandbox"):
        parse_mcp_config({"mcpServers": {"s": {"command": "x", "sandbox": "no"}}})
    with pytest.raises(InvalidInputError, match="unknown key 'sandbox'"):
        parse_mcp_config({"mcpServers": {"s": {"url": "http://h/mcp", "sandbox": False}}})


async def test_a_server_script_in_a_hidden_place_is_shown_to_it_alone_and_read_only(work: Path) -> None:
    """``python ~/tools/server.py`` or a script under ``/tmp``: the file the configuration names
    is shown read-only; its neighbours stay hidden."""
    elsewhere = work.parent / "elsewhere"  # under /tmp, which the sandbox hides
    elsewhere.mkdir()
    script = elsewhere / "server.py"
    shutil.copy(SERVER_SCRIPT, script)
    original = script.read_text()
    (elsewhere / "neighbour.txt").write_text("private\n")
    errors: list[str] = []

    async def report(name: str, exc: Exception) -> None:
        errors.append(str(exc))

    status = sandbox_status("on", "deny", str(work))
    config = MCPServerConfig("hid", command=sys.executable, args=(str(script),))
    async with MCPClients([config], containment=status, on_error=report) as clients:
        tools = await clients.tools()
        assert errors == []
        await write_marker(clients, "hid", work / "from-hidden-script", work)
        with pytest.raises(Exception, match="Error executing tool write_marker"):
            await write_marker(clients, "hid", script, work)  # shown, but read-only
        with contextlib.suppress(Exception):  # it writes, if at all, in its private /tmp
            await write_marker(clients, "hid", elsewhere / "neighbour.txt", work)
    assert {t.name for t in tools} >= {"hid__write_marker", "hid__pid"}
    assert (work / "from-hidden-script").read_text() == "marker\n"
    assert script.read_text() == original
    assert (elsewhere / "neighbour.txt").read_text() == "private\n"


async def test_a_contained_server_cannot_rewrite_policy_files_or_read_the_database_in_its_directory(
    work: Path,
) -> None:
    """What a shell command may not change or see in the working directory, a stdio MCP server
    running in the same sandbox may not either: the policy that judges its calls, and the
    database that records them."""
    policy, database = work / "policy.toml", work / "agentworld.db"
    policy.write_text("# the world's rules\n")
    database.write_text("secret rows\n")
    status = sandbox_status("on", "deny", str(work))
    kept = ((str(policy),), (str(database),))
    async with MCPClients([server("box")], containment=status, kept=kept) as clients:
        tools = {t.name: t for t in await clients.tools()}
        read, write = tools["box__read_text"], tools["box__write_marker"]
        assert read.run is not None and write.run is not None
        assert (await read.run({"path": str(policy)}, context(work)))["result"] == "# the world's rules\n"
        with pytest.raises(Exception, match="Error executing tool read_text") as refused:
            await read.run({"path": str(database)}, context(work))  # nothing of it can be read
        assert "secret" not in str(refused.value)
        with pytest.raises(Exception, match="Error executing tool write_marker"):
            await write.run({"path": str(policy)}, context(work))
        await write.run({"path": str(work / "notes")}, context(work))  # the rest stays writable
    assert policy.read_text() == "# the world's rules\n"
    assert (work / "notes").read_text() == "marker\n"
