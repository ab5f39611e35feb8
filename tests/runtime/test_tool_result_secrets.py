"""Secrets in what tools return, run for real: a world whose policy allows the tool, a real
file in a temp dir, the loopback model, the real SQLite file read back with ``sqlite3``.

Before the fix, ``read_file .env`` handed the running process's ``OPENAI_API_KEY`` and
``MY_SECRET_TOKEN`` values to the model verbatim (``cat .env`` through ``shell_cmd`` masked
them), and the tool log and the event log kept ``DB_PASSWORD=hunter2hunter2`` from the file's
second line: the result was redacted as JSON text, where that line starts after ``\\n``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

KEY = "sk-testkey-ABCDEFGHIJKLMNOP1234"
TOKEN = "supersecretvalue123"
IN_PROCESS = (KEY, TOKEN)
"""Values of this process's secret variables: never stored, logged or sent to the model."""
IN_FILE_ONLY = ("hunter2hunter2", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
"""Values only the file names as secrets: the model reads the file, the logs never keep them."""
ENV_FILE = (
    f"OPENAI_API_KEY={KEY}\nDB_PASSWORD=hunter2hunter2\nX={TOKEN}\n"
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
)
POLICY = """
[[rule]]
toolName = ["read_file", "list_files", "local__*"]
decision = "allow"
priority = 900

[[rule]]
toolName = "shell_cmd"
commandPrefix = "cat"
decision = "allow"
priority = 900
"""
MCP_SERVER = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")
CLIENT_TOOLS = [{"name": "clipboard", "description": "The user's clipboard.", "parameters": {"type": "object"}}]


@pytest.fixture(autouse=True)
def secrets_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MY_SECRET_TOKEN", TOKEN)


@pytest.fixture
async def world(aw: AgentWorld, server: OpenAIWireServer, tmp_path: Path) -> Path:
    """World ``w`` allowing the tools above, working in ``tmp_path/work`` (with the ``.env``)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / ".env").write_text(ENV_FILE)
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    mcp = {"mcpServers": {"local": {"command": sys.executable, "args": [MCP_SERVER], "env": {"MY_SECRET_TOKEN": TOKEN}}}}
    await aw.create_world(
        "w", working_dir=str(work), policy_files=[str(policy)], streaming=False,
        mcp_config=mcp, client_tools=CLIENT_TOOLS,
    )  # fmt: skip
    await aw.create_agent(
        "w", "a1", provider="openai", model="m", base_url=server.base_url, system_prompt="agent:a1"
    )
    return work


def calls_then_done(call: ToolCallSpec) -> Any:
    def respond(body: dict[str, Any]) -> Reply:
        return Reply.text("done") if body["messages"][-1]["role"] == "tool" else Reply.tools(call)

    return respond


def stored(db: Path, table: str) -> str:
    """Every row of ``table`` as text, read straight from the SQLite file."""
    with closing(sqlite3.connect(db)) as conn:
        return "\n".join(repr(row) for row in conn.execute(f"SELECT * FROM {table}"))


def model_inputs(server: OpenAIWireServer) -> str:
    return json.dumps(server.requests)


def tool_results(server: OpenAIWireServer) -> list[str]:
    """The tool results of the last model request that had any: what the model was shown."""
    shown = [[m["content"] for m in r["messages"] if m["role"] == "tool"] for r in server.requests]
    return next((results for results in reversed(shown) if results), [])


def assert_nothing_leaked(db: Path, server: OpenAIWireServer) -> None:
    shown = model_inputs(server)
    for value in IN_PROCESS:
        assert value not in shown
        for table in ("messages", "tool_logs", "events", "pending_calls"):
            assert value not in stored(db, table), (value, table)
    for value in IN_FILE_ONLY:
        for table in ("tool_logs", "events"):
            assert value not in stored(db, table), (value, table)


async def test_read_file_masks_the_running_processs_keys_everywhere(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, world: Path, tmp_path: Path
) -> None:
    script.by_agent["a1"] = calls_then_done(ToolCallSpec(name="read_file", arguments='{"path": ".env"}'))

    await aw.send("w", "@a1 read it", timeout=30)

    (result,) = tool_results(server)
    content = json.loads(result)["content"]
    assert "OPENAI_API_KEY=[REDACTED:OPENAI_API_KEY]\n" in content
    assert "X=[REDACTED:MY_SECRET_TOKEN]\n" in content
    assert_nothing_leaked(tmp_path / "agentworld.db", server)
    (log,) = await aw.tool_logs("w")
    assert "DB_PASSWORD=[REDACTED:password]" in json.loads(log.output)["content"]


async def test_cat_through_the_shell_keeps_the_files_secrets_out_of_the_logs(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, world: Path, tmp_path: Path
) -> None:
    script.by_agent["a1"] = calls_then_done(ToolCallSpec(name="shell_cmd", arguments='{"command": "cat .env"}'))

    await aw.send("w", "@a1 read it", timeout=30)

    (result,) = tool_results(server)
    assert "[REDACTED:OPENAI_API_KEY]" in json.loads(result)["stdout"]
    assert_nothing_leaked(tmp_path / "agentworld.db", server)


async def test_list_files_masks_a_secret_value_in_a_file_name(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, world: Path, tmp_path: Path
) -> None:
    (world / f"{TOKEN}.txt").write_text("x")
    script.by_agent["a1"] = calls_then_done(ToolCallSpec(name="list_files", arguments='{"path": "."}'))

    await aw.send("w", "@a1 list", timeout=30)

    (result,) = tool_results(server)
    assert "[REDACTED:MY_SECRET_TOKEN].txt" in result
    assert_nothing_leaked(tmp_path / "agentworld.db", server)


async def test_an_mcp_tools_result_is_masked(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, world: Path, tmp_path: Path
) -> None:
    call = ToolCallSpec(name="local__env", arguments='{"name": "MY_SECRET_TOKEN"}')
    script.by_agent["a1"] = calls_then_done(call)

    await aw.send("w", "@a1 ask the server", timeout=60)

    (result,) = tool_results(server)
    assert "[REDACTED:MY_SECRET_TOKEN]" in result
    assert_nothing_leaked(tmp_path / "agentworld.db", server)


async def test_a_client_tools_result_is_masked(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, world: Path, tmp_path: Path
) -> None:
    script.by_agent["a1"] = calls_then_done(ToolCallSpec(name="clipboard", arguments="{}", id="call_clip"))
    await aw.send("w", "@a1 paste", timeout=30)

    await aw.respond("w", "call_clip", {"text": f"line one\nkey: {KEY}\ntoken {TOKEN}"}, timeout=30)

    (result,) = tool_results(server)
    assert "[REDACTED:MY_SECRET_TOKEN]" in result
    assert_nothing_leaked(tmp_path / "agentworld.db", server)
