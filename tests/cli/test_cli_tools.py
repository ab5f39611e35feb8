"""Tools through the CLI (issue acceptance 2, 4, 5): an MCP server configured with --mcp-config,
a client-side tool answered from another process, and the tool log of it all."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)

MCP_SERVER = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")


def tool_then_answer(*calls: ToolCallSpec) -> Any:
    def respond(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
            return Reply.text("tools said: " + " | ".join(results))
        return Reply.tools(*calls)

    return respond


def _world(cli: Any, server: OpenAIWireServer, tmp_path: Path, *options: str) -> None:
    cli("world", "create", "w1", "--working-dir", str(tmp_path), *options)
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")


def test_an_mcp_tool_from_the_world_config_runs_and_a_failing_one_is_an_error_result(
    cli: Any, server: OpenAIWireServer, script: Any, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"calc": {"command": sys.executable, "args": [MCP_SERVER], "trust": True}}}))
    _world(cli, server, tmp_path, "--mcp-config", str(config))
    offered = {t["name"]: t for t in cli("tools", "w1", "--json").json()["tools"]}
    assert offered["calc__add"]["server"] == "calc"
    assert offered["calc__echo"]["annotations"].get("readOnlyHint") is True

    script.by_agent["a1"] = tool_then_answer(
        ToolCallSpec(name="calc__add", arguments='{"a": 2, "b": 40}', id="call_add"),
        ToolCallSpec(name="calc__fail", arguments='{"message": "disk on fire"}', id="call_fail"),
    )
    sent = cli("send", "w1", "@a1 add and fail", "--json").json()

    names = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert {"calc__add", "calc__fail", "calc__echo"} <= names
    results = {m["tool_call_id"]: m["content"] for m in sent["messages"] if m["role"] == "tool"}
    assert "42" in results["call_add"]
    assert "disk on fire" in json.loads(results["call_fail"])["error"]
    assert "42" in sent["messages"][-1]["content"]
    statuses = {e["toolCallId"]: e["status"] for e in cli("tool-logs", "w1", "--json").json()["toolLogs"]}
    assert statuses == {"call_add": "ok", "call_fail": "error"}

    # The world keeps working after the failure, in a new process.
    script.by_agent["a1"] = tool_then_answer(ToolCallSpec(name="calc__echo", arguments='{"text": "still here"}'))
    again = cli("send", "w1", "@a1 echo", "--json").json()
    assert "still here" in again["messages"][-1]["content"]


def test_a_broken_mcp_server_is_reported_and_the_rest_of_the_world_works(
    cli: Any, server: OpenAIWireServer, script: Any, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "good": {"command": sys.executable, "args": [MCP_SERVER]},
        # A command that exists but is no MCP server (a missing one is refused when set).
        "broken": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]},
    }}))
    (tmp_path / "a.txt").write_text("ALPHA")
    _world(cli, server, tmp_path, "--mcp-config", str(config))
    script.by_agent["a1"] = tool_then_answer(ToolCallSpec(name="read_file", arguments='{"path": "a.txt"}'))

    sent = cli("send", "w1", "@a1 read", "--json", check=False)

    assert "ALPHA" in sent.json()["messages"][-1]["content"]
    assert "broken" in sent.stderr  # reported as a system error
    names = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert "good__add" in names and not any(n.startswith("broken__") for n in names)


def test_a_client_tool_call_waits_and_is_answered_from_another_process(
    cli: Any, server: OpenAIWireServer, script: Any, tmp_path: Path
) -> None:
    declared = tmp_path / "client-tools.json"
    declared.write_text(json.dumps([{
        "name": "ask_user_location",
        "description": "Ask the user's browser for its location.",
        "parameters": {"type": "object", "properties": {"precision": {"type": "string"}}},
    }]))
    _world(cli, server, tmp_path, "--client-tools", str(declared))
    script.by_agent["a1"] = tool_then_answer(
        ToolCallSpec(name="ask_user_location", arguments='{"precision": "city"}', id="call_loc")
    )

    sent = cli("send", "w1", "@a1 where am I?", "--json").json()
    assert sent["messages"][-1]["tool_calls"][0]["id"] == "call_loc"
    (waiting,) = cli("pending", "w1", "--json").json()["pendingToolCalls"]
    assert (waiting["toolCallId"], waiting["toolName"]) == ("call_loc", "ask_user_location")

    answered = cli("respond", "w1", "call_loc", "--result", '{"city": "Lisbon"}', "--json").json()

    assert answered["messages"][0]["tool_call_id"] == "call_loc"
    assert "Lisbon" in answered["messages"][-1]["content"]
    assert cli("pending", "w1", "--json").json() == {"pendingToolCalls": []}
    replay = cli("respond", "w1", "call_loc", "--result", "{}", check=False)
    assert replay.code == 1 and "already" in replay.stderr


def test_a_client_tool_failure_given_as_json_is_stored_as_json(
    cli: Any, server: OpenAIWireServer, script: Any, tmp_path: Path
) -> None:
    declared = tmp_path / "client-tools.json"
    declared.write_text(json.dumps([{"name": "pick_color", "parameters": {"type": "object"}}]))
    _world(cli, server, tmp_path, "--client-tools", str(declared))
    script.by_agent["a1"] = tool_then_answer(ToolCallSpec(name="pick_color", arguments="{}", id="call_c"))
    cli("send", "w1", "@a1 pick", "--json")

    failed = '[1, "x", {"k": null, "b": true}]'
    answered = cli("respond", "w1", "call_c", "--result", failed, "--error", "--json").json()

    (result,) = [m for m in answered["messages"] if m.get("tool_call_id") == "call_c"]
    assert json.loads(result["content"]) == {"error": [1, "x", {"k": None, "b": True}]}


def test_a_bad_mcp_config_is_refused_when_the_world_is_configured(cli: Any, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"calc": {"command": "x", "timeout": 5}}}))
    refused = cli("world", "create", "w1", "--mcp-config", str(config), check=False)
    assert refused.code == 1 and "unknown key 'timeout'" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert cli("world", "list", "--json").json() == {"worlds": []}
