"""MCP servers as tools, against real server processes over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

from agentworld.errors import InvalidInputError
from agentworld.runtime.authorizer import tool_default_rule
from agentworld.tools.mcp import (
    MCPClients,
    MCPServerConfig,
    MCPServerError,
    parse_mcp_config,
    tool_result_value,
)
from agentworld.tools.registry import Tool, ToolContext

SERVER_SCRIPT = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")
CONTEXT = ToolContext(world="w", chat_id="c", agent="a")


def stdio_server(name: str, *options: str, env: dict[str, str] | None = None) -> MCPServerConfig:
    return MCPServerConfig(
        name, command=sys.executable, args=(SERVER_SCRIPT, *options), env=env or {}
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The test server over streamable HTTP on a free port, once it accepts connections."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER_SCRIPT, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP test server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """One HTTP test server for the module's tests that leave it running."""
    with http_server() as (url, _):
        yield url


@pytest.fixture
def doomed_http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """An HTTP test server of its own, for a test that kills it."""
    with http_server() as running:
        yield running


class Errors:
    """Collects what MCPClients reports through on_error."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Exception]] = []

    async def __call__(self, server: str, exc: Exception) -> None:
        self.seen.append((server, exc))

    def messages(self, server: str) -> list[str]:
        return [str(exc) for name, exc in self.seen if name == server]


@pytest.fixture
def errors() -> Errors:
    return Errors()


@pytest.fixture(params=["stdio", "http"])
def config(request: pytest.FixtureRequest) -> MCPServerConfig:
    if request.param == "stdio":
        return stdio_server("test")
    url = request.getfixturevalue("http_url")
    return MCPServerConfig("test", url=url, headers={"X-World": "w1"}, transport="streamable-http")


@pytest.fixture
async def clients(config: MCPServerConfig, errors: Errors) -> AsyncIterator[MCPClients]:
    async with MCPClients([config], on_error=errors) as running:
        yield running


async def tools_by_name(clients: MCPClients) -> dict[str, Tool]:
    return {tool.name: tool for tool in await clients.tools()}


async def call(clients: MCPClients, tool_name: str, /, **arguments: Any) -> Any:
    tool = (await tools_by_name(clients))[tool_name]
    assert tool.run is not None
    return await tool.run(arguments, CONTEXT)


def stdio_children() -> list[int]:
    """Our child processes running the test server over stdio (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        mine = parent == os.getpid() and SERVER_SCRIPT.encode() in cmdline
        if mine and b"--http" not in cmdline:
            found.append(int(entry.name))
    return found


def process_exists(pid: int) -> bool:
    """True while the process runs or is an unreaped zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ---------------------------------------------------------------- both transports


async def test_tools_are_namespaced_with_schema_and_annotations(clients: MCPClients) -> None:
    tools = await tools_by_name(clients)

    assert {"test__echo", "test__add", "test__fail", "test__crash", "test__write_marker"} <= set(
        tools
    )
    echo = tools["test__echo"]
    assert echo.server == "test"
    assert echo.location == "server"
    assert echo.description == "Return the text unchanged."
    assert echo.parameters["properties"]["text"]["type"] == "string"
    assert echo.parameters["required"] == ["text"]
    assert echo.annotations == {"title": "Echo", "readOnlyHint": True}
    assert tools["test__write_marker"].annotations == {"destructiveHint": True}
    assert tools["test__add"].annotations == {}


async def test_mcp_tools_ask_by_default_unless_read_only(clients: MCPClients) -> None:
    tools = await tools_by_name(clients)
    defaults = {name: tool_default_rule(tool).decision.value for name, tool in tools.items()}
    assert defaults["test__echo"] == "ALLOW"  # readOnlyHint
    assert defaults["test__add"] == "ASK_USER"  # no annotations: MCP says it may be destructive
    assert defaults["test__write_marker"] == "ASK_USER"
    assert not any(tool.trusted for tool in tools.values())


async def test_a_trusted_servers_tools_are_allowed_by_default(config: MCPServerConfig) -> None:
    async with MCPClients([replace(config, trust=True)]) as trusted:
        tools = await tools_by_name(trusted)
    assert all(tool.trusted for tool in tools.values())
    assert {tool_default_rule(t).decision.value for t in tools.values()} == {"ALLOW"}


async def test_text_and_structured_results(clients: MCPClients) -> None:
    assert await call(clients, "test__echo", text="hello") == "hello"
    assert await call(clients, "test__add", a=2, b=3) == {"result": 5}
    assert await call(clients, "test__picture") == "a pixel\n[image/png]"


async def test_error_result_raises_with_the_server_message(clients: MCPClients) -> None:
    with pytest.raises(MCPServerError, match="boom") as caught:
        await call(clients, "test__fail", message="boom")
    assert caught.value.server == "test"
    # The session survives a failed call.
    assert await call(clients, "test__echo", text="still here") == "still here"


async def test_protocol_error_raises_with_the_server_message(clients: MCPClients) -> None:
    with pytest.raises(MCPServerError, match="rejected the call to 'protocol_error': not today"):
        await call(clients, "test__protocol_error", message="not today")


async def test_session_is_reused_across_calls(clients: MCPClients) -> None:
    first = await call(clients, "test__pid")
    second = await call(clients, "test__pid")
    assert first == second
    assert await clients.tools() == await clients.tools()


async def test_concurrent_calls_from_many_tasks_share_one_session(clients: MCPClients) -> None:
    texts = [f"call {n}" for n in range(8)]
    echoes = await asyncio.gather(*(call(clients, "test__echo", text=text) for text in texts))
    pids = await asyncio.gather(*(call(clients, "test__pid") for _ in range(4)))
    assert echoes == texts
    assert len({pid["result"] for pid in pids}) == 1


async def test_slow_call_times_out_and_the_session_survives(config: MCPServerConfig) -> None:
    async with MCPClients([config], call_timeout=0.5) as clients:
        with pytest.raises(MCPServerError, match=r"did not answer 'sleep' within 0.5s"):
            await call(clients, "test__sleep", seconds=3)
        assert await call(clients, "test__echo", text="after") == "after"


async def test_write_marker_creates_the_file(clients: MCPClients, tmp_path: Path) -> None:
    marker = tmp_path / "marker.txt"
    assert await call(clients, "test__write_marker", path=str(marker)) == {"result": str(marker)}
    assert marker.read_text() == "marker\n"


# ---------------------------------------------------------------- transport details


async def test_http_headers_reach_the_server(http_url: str) -> None:
    config = MCPServerConfig(
        "web", url=http_url, headers={"X-World": "w1"}, transport="streamable-http"
    )
    async with MCPClients([config]) as clients:
        assert await call(clients, "web__header", name="X-World") == {"result": "w1"}


async def test_stdio_env_reaches_the_server() -> None:
    async with MCPClients([stdio_server("local", env={"AGENTWORLD_PROBE": "42"})]) as clients:
        assert await call(clients, "local__env", name="AGENTWORLD_PROBE") == {"result": "42"}


async def test_servers_that_fail_to_start_are_reported_and_others_work(errors: Errors) -> None:
    configs = [
        MCPServerConfig("missing", command="/nonexistent/mcp-server"),
        MCPServerConfig(
            "dies",
            command=sys.executable,
            args=("-c", "import sys; print('no luck', file=sys.stderr); sys.exit(3)"),
        ),
        MCPServerConfig(
            "nobody", url=f"http://127.0.0.1:{free_port()}/mcp", transport="streamable-http"
        ),
        stdio_server("good"),
    ]
    async with MCPClients(configs, on_error=errors) as clients:
        tools = await tools_by_name(clients)
        assert {tool.server for tool in tools.values()} == {"good"}
        assert await call(clients, "good__echo", text="fine") == "fine"

    assert [server for server, _ in errors.seen] == ["missing", "dies", "nobody"]
    assert all(isinstance(exc, MCPServerError) for _, exc in errors.seen)
    assert "could not start" in errors.messages("missing")[0]
    assert "/nonexistent/mcp-server" in errors.messages("missing")[0]
    assert "no luck" in errors.messages("dies")[0]
    assert "ConnectError" in errors.messages("nobody")[0]


async def test_a_failing_on_error_handler_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken_handler(server: str, exc: Exception) -> None:
        raise RuntimeError("handler broke")

    configs = [MCPServerConfig("missing", command="/nonexistent/mcp-server"), stdio_server("good")]
    async with MCPClients(configs, on_error=broken_handler) as clients:
        assert "good__echo" in await tools_by_name(clients)
    assert "on_error handler failed for MCP server 'missing'" in caplog.text


async def test_tool_claiming_another_servers_prefix_is_refused(errors: Errors) -> None:
    configs = [stdio_server("alpha"), stdio_server("beta", "--spoof", "alpha")]
    async with MCPClients(configs, on_error=errors) as clients:
        names = set(await tools_by_name(clients))

    assert "beta__alpha__evil" not in names
    assert "alpha__evil" not in names
    assert {"alpha__echo", "beta__echo"} <= names
    [message] = errors.messages("beta")
    assert "'alpha__evil'" in message and "prefix of server 'alpha'" in message


async def test_tool_with_its_own_prefix_is_not_spoofing(errors: Errors) -> None:
    async with MCPClients([stdio_server("solo", "--spoof", "solo")], on_error=errors) as clients:
        assert "solo__solo__evil" in await tools_by_name(clients)
    assert errors.seen == []


async def test_crashed_server_is_started_again_on_the_next_call(errors: Errors) -> None:
    async with MCPClients([stdio_server("fragile")], on_error=errors) as clients:
        before = await call(clients, "fragile__pid")
        with pytest.raises(
            MCPServerError, match="closed the connection during the call to 'crash'"
        ):
            await call(clients, "fragile__crash")
        after = await call(clients, "fragile__pid")
        assert after != before
        assert not process_exists(before["result"])
        assert await call(clients, "fragile__echo", text="back") == "back"

    [report] = errors.messages("fragile")
    assert "went away" in report


async def test_failed_restart_raises(tmp_path: Path, errors: Errors) -> None:
    config = stdio_server("once", "--refuse-restart", str(tmp_path / "started"))
    async with MCPClients([config], on_error=errors) as clients:
        with pytest.raises(MCPServerError):
            await call(clients, "once__crash")
        with pytest.raises(MCPServerError, match="could not start.*refusing to start again"):
            await call(clients, "once__echo", text="hello?")


async def test_aclose_ends_every_process_and_tools_works_again() -> None:
    clients = MCPClients([stdio_server("one"), stdio_server("two")])
    first = [(await call(clients, f"{name}__pid"))["result"] for name in ("one", "two")]
    assert sorted(stdio_children()) == sorted(first)
    await clients.aclose()
    assert not any(process_exists(pid) for pid in first)
    assert stdio_children() == []

    second = (await call(clients, "one__pid"))["result"]
    assert second not in first
    await clients.aclose()
    assert not process_exists(second)
    assert stdio_children() == []


async def test_killed_http_server_fails_calls_cleanly(
    doomed_http_server: tuple[str, subprocess.Popen[bytes]], errors: Errors
) -> None:
    url, process = doomed_http_server
    config = MCPServerConfig("remote", url=url, transport="streamable-http")
    async with MCPClients([config], on_error=errors) as clients:
        assert await call(clients, "remote__echo", text="up") == "up"
        process.kill()
        process.wait()
        with pytest.raises(MCPServerError, match="closed the connection during the call"):
            await call(clients, "remote__echo", text="anyone?")
        # The next call tries to connect again, once, and says why it could not.
        with pytest.raises(MCPServerError, match="could not start: ConnectError"):
            await call(clients, "remote__echo", text="anyone?")
    [report] = errors.messages("remote")
    assert "went away" in report


# ---------------------------------------------------------------- results (pure)


def test_structured_content_wins_over_text() -> None:
    result = CallToolResult(content=[TextContent(text="3")], structured_content={"result": 3})
    assert tool_result_value(result) == {"result": 3}


def test_non_text_blocks_are_summarised() -> None:
    result = CallToolResult(
        content=[
            TextContent(text="see"),
            ImageContent(data="", mime_type="image/png"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="inside")),
        ]
    )
    assert tool_result_value(result) == "see\n[image/png]\ninside"


# ---------------------------------------------------------------- configuration


def test_parse_stdio_and_http_servers() -> None:
    configs = parse_mcp_config(
        {
            "mcpServers": {
                "files": {
                    "command": "npx",
                    "args": ["-y", "server-files"],
                    "env": {"A": "1"},
                    "cwd": "/tmp",
                },
                "web": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
                "web-2": {"url": "http://localhost:9000/mcp", "transport": "http"},
                "local_1": {"command": "server", "type": "stdio"},
                "mine": {"command": "server", "trust": True},
                "mine-web": {"url": "http://localhost:9001/mcp", "trust": True},
            }
        }
    )
    assert configs == [
        MCPServerConfig(
            "files", command="npx", args=("-y", "server-files"), env={"A": "1"}, cwd="/tmp"
        ),
        MCPServerConfig(
            "web",
            url="https://example.com/mcp",
            headers={"Authorization": "Bearer x"},
            transport="streamable-http",
        ),
        MCPServerConfig("web-2", url="http://localhost:9000/mcp", transport="streamable-http"),
        MCPServerConfig("local_1", command="server"),
        MCPServerConfig("mine", command="server", trust=True),
        MCPServerConfig(
            "mine-web", url="http://localhost:9001/mcp", transport="streamable-http", trust=True
        ),
    ]
    assert not any(c.trust for c in configs[:4])  # trust is the owner's explicit choice
    assert parse_mcp_config({}) == []


@pytest.mark.parametrize(
    ("servers", "problem"),
    [
        ({"s": {"command": "x", "timeout": 3}}, r"'s': unknown key 'timeout'"),
        ({"s": {"url": "http://h/mcp", "args": ["a"]}}, r"'s': unknown key 'args'"),
        ({"s": {"args": ["a"]}}, r"'s': expected an object with either 'command'"),
        ({"s": {"command": "x", "url": "http://h/mcp"}}, r"'s': expected an object with either"),
        ({"s": "npx server"}, r"'s': expected an object"),
        ({"s": {"command": "x", "args": ["a", 1]}}, r"'s': args.1: Input should be a valid string"),
        ({"s": {"command": "x", "args": "a b"}}, r"'s': args: Input should be a valid list"),
        ({"s": {"command": ""}}, r"'s': command: String should have at least 1 character"),
        ({"s": {"command": "x", "env": {"A": 1}}}, r"'s': env.A: Input should be a valid string"),
        ({"s": {"url": "ftp://h"}}, r"'s': url: String should match pattern"),
        ({"s": {"command": "x", "trust": "yes"}}, r"'s': trust: Input should be a valid boolean"),
        ({"s": {"url": "http://h/mcp", "trust": 1}}, r"'s': trust: Input should be a valid boolean"),
        ({"s": {"command": "x", "trusted": True}}, r"'s': unknown key 'trusted'"),
        (
            {"s": {"url": "http://h", "transport": "sse"}},
            r"'s': the 'sse' transport is not supported",
        ),
        (
            {"s": {"url": "http://h", "type": "stdio"}},
            r"'s': type: Input should be 'streamable-http'",
        ),
        ({"s": {"command": "x", "transport": "http"}}, r"'s': transport: Input should be 'stdio'"),
        ({"my server": {"command": "x"}}, r"'my server': use only letters, digits"),
        ({"a__b": {"command": "x"}}, r"'a__b': a name may not contain '__'"),
        ({"a_": {"command": "x"}}, r"'a_': a name may not contain '__' or end with '_'"),
    ],
)
def test_invalid_server_entries_are_rejected(servers: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidInputError, match=problem):
        parse_mcp_config({"mcpServers": servers})


def test_invalid_documents_are_rejected() -> None:
    with pytest.raises(InvalidInputError, match="only an 'mcpServers' key"):
        parse_mcp_config({"servers": {}})
    with pytest.raises(InvalidInputError, match="'mcpServers' must map"):
        parse_mcp_config({"mcpServers": ["a"]})


def test_duplicate_and_invalid_names_are_rejected_by_mcp_clients() -> None:
    with pytest.raises(InvalidInputError, match="configured twice"):
        MCPClients([MCPServerConfig("a", command="x"), MCPServerConfig("a", command="y")])
    with pytest.raises(InvalidInputError, match="may not contain"):
        MCPClients([MCPServerConfig("a__b", command="x")])
