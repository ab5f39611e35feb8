"""`agentworld policy test WORLD` says what the runtime does (issue acceptance: admin rules and
MCP tools agree). Real parts only: an MCP server process, CLI subprocesses, a loopback model
that makes the very calls `policy test` was asked about.

The MCP server speaks streamable HTTP and runs once for the module: every CLI process connects
to it as two configured servers (``calc`` and the trusted ``safe``) instead of starting two
server processes of its own, which would cost seconds per command.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentworld.runtime.authorizer import ADMIN_POLICY_ENV
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

MCP_SERVER = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")

WORLD_POLICY = """
[[rule]]
name = "pid is harmless"
mcpName = "calc"
toolName = "pid"
decision = "allow"
priority = 10

[[rule]]
name = "no env in this world"
mcpName = "calc"
toolName = "env"
decision = "deny"
priority = 10
"""

ADMIN_POLICY = """
[[rule]]
name = "admin: no reading files"
toolName = "read_file"
decision = "deny"
priority = 0
denyMessage = "The administrator does not allow reading files."

[[rule]]
name = "admin: env is fine"
mcpName = "calc"
toolName = "env"
decision = "allow"
priority = 0
"""

CALLS: list[tuple[str, str, dict[str, Any], str]] = [
    # (call id, tool, arguments, what both must say)
    ("call_unannotated", "calc__add", {"a": 2, "b": 40}, "ASK_USER"),  # used to run unasked
    ("call_read_only", "calc__echo", {"text": "hi"}, "ALLOW"),  # readOnlyHint
    ("call_destructive", "calc__write_marker", {"path": "marker.txt"}, "ASK_USER"),
    ("call_trusted", "safe__add", {"a": 1, "b": 1}, "ALLOW"),  # "trust": true
    ("call_admin_deny", "read_file", {"path": "a.txt"}, "DENY"),  # admin beats the shipped allow
    ("call_admin_allow", "calc__env", {"name": "HOME"}, "ALLOW"),  # admin beats the world's deny
    ("call_world_file", "calc__pid", {}, "ALLOW"),  # the world's file allows it
    ("call_legacy", "list_files", {"path": "."}, "DENY"),  # --excluded-tool
    ("call_unknown", "calc__nope", {}, "DENY"),  # the runtime answers with an error result
]


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    process = subprocess.Popen([sys.executable, MCP_SERVER, "--http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the MCP test server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def admin_env(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "admin.toml"
    path.write_text(ADMIN_POLICY)
    return {ADMIN_POLICY_ENV: str(path)}


@pytest.fixture
def world(cli: Any, server: OpenAIWireServer, tmp_path: Path, mcp_url: str) -> Path:
    """w1: an untrusted MCP server `calc`, a trusted one `safe`, a policy file, a legacy list."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("ALPHA")
    config = tmp_path / "mcp.json"
    servers = {"calc": {"url": mcp_url}, "safe": {"url": mcp_url, "trust": True}}
    config.write_text(json.dumps({"mcpServers": servers}))
    policy = tmp_path / "world.toml"
    policy.write_text(WORLD_POLICY)
    cli("world", "create", "w1", "--working-dir", str(work), "--mcp-config", str(config),
        "--policy", str(policy), "--excluded-tool", "list_files")
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    return work


def calls_then_answer(*calls: ToolCallSpec) -> Any:
    """The model makes ``calls`` at once, then answers in words once it sees results."""

    def respond(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("done")
        return Reply.tools(*calls)

    return respond


def what_the_runtime_did(cli: Any, sent: dict[str, Any], env: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Per call id: ALLOW (it ran and its result is stored), ASK_USER (an approval waits) or
    DENY (an error result, nothing ran), with the text the model read."""
    results = {m["tool_call_id"]: m["content"] for m in sent["messages"] if m["role"] == "tool"}
    waiting = {a["toolName"] for a in sent["pendingApprovals"]}
    ran = {e["toolCallId"]: e["status"] for e in cli("tool-logs", "w1", "--json", env=env).json()["toolLogs"]}
    done: dict[str, tuple[str, str]] = {}
    for call_id, tool, _arguments, _expected in CALLS:
        if tool in waiting and call_id not in results and call_id not in ran:
            done[call_id] = ("ASK_USER", "")
        elif call_id in results and ran.get(call_id) == "ok":
            done[call_id] = ("ALLOW", results[call_id])
        elif call_id in results and call_id not in ran:
            done[call_id] = ("DENY", json.loads(results[call_id])["error"])
        else:
            done[call_id] = ("unclear", f"result={results.get(call_id)!r} log={ran.get(call_id)!r}")
    return done


def test_policy_test_world_agrees_with_the_runtime(
    cli: Any, script: Any, world: Path, admin_env: dict[str, str]
) -> None:
    said = {
        call_id: cli("policy", "test", "w1", "--tool", tool, "--args", json.dumps(arguments), "--json",
                     env=admin_env).json()
        for call_id, tool, arguments, _expected in CALLS
    }
    script.by_agent["a1"] = calls_then_answer(
        *(ToolCallSpec(name=tool, arguments=json.dumps(arguments), id=call_id) for call_id, tool, arguments, _ in CALLS)
    )
    sent = cli("send", "w1", "@a1 go", "--json", env=admin_env).json()
    done = what_the_runtime_did(cli, sent, admin_env)

    expected = {call_id: decision for call_id, _tool, _arguments, decision in CALLS}
    assert {call_id: verdict["decision"] for call_id, verdict in said.items()} == expected
    assert {call_id: decision for call_id, (decision, _text) in done.items()} == expected
    for call_id, (decision, text) in done.items():
        if decision == "DENY":  # the model reads exactly the reason policy test gives
            assert said[call_id]["reason"] == text
    assert said["call_admin_deny"]["rule"]["source"] == admin_env[ADMIN_POLICY_ENV]
    assert said["call_admin_allow"]["rule"]["priority"] == 3.0
    assert said["call_unknown"]["by"] == "not callable"


def test_a_session_approval_counts_for_its_agent_and_chat_in_both(
    cli: Any, script: Any, world: Path, admin_env: dict[str, str]
) -> None:
    add = ToolCallSpec(name="calc__add", arguments='{"a": 2, "b": 40}', id="call_add")
    script.by_agent["a1"] = calls_then_answer(add)
    sent = cli("send", "w1", "@a1 add", "--json", env=admin_env).json()
    (approval,) = sent["pendingApprovals"]
    cli("approve", "w1", approval["approvalId"], "--decision", "approve", "--scope", "session", env=admin_env)

    def tested(*extra: str) -> dict[str, Any]:
        return cli("policy", "test", "w1", "--tool", "calc__add", "--args", add.arguments, *extra, "--json",
                   env=admin_env).json()

    covered = tested("--agent", "a1", "--chat", sent["chatId"])
    assert (covered["decision"], covered["by"]) == ("ALLOW", "session approval")
    assert tested()["decision"] == "ASK_USER"  # no agent and chat given: nothing to cover it
    other_chat = cli("chat", "new", "w1").stdout.strip()
    assert tested("--agent", "a1", "--chat", other_chat)["decision"] == "ASK_USER"

    script.by_agent["a1"] = calls_then_answer(ToolCallSpec(name="calc__add", arguments=add.arguments, id="call_again"))
    again = cli("send", "w1", "@a1 add again", "--chat", sent["chatId"], "--json", env=admin_env).json()
    assert again["pendingApprovals"] == []
    assert any(m["tool_call_id"] == "call_again" and "42" in m["content"] for m in again["messages"])


def test_policy_list_shows_admin_rules_and_the_mcp_defaults_in_force(
    cli: Any, world: Path, admin_env: dict[str, str]
) -> None:
    rules = cli("policy", "list", "w1", "--json", env=admin_env).json()["rules"]
    admin = [r for r in rules if r["source"] == admin_env[ADMIN_POLICY_ENV]]
    assert [(r["toolName"], r["decision"], r["priority"]) for r in admin] == [
        ("read_file", "DENY", 3.0), ("calc__env", "ALLOW", 3.0),
    ]
    assert rules[:2] == admin  # the highest tier first
    defaults = {r["toolName"]: r["decision"] for r in rules if r["source"] == "tool settings"}
    assert (defaults["calc__add"], defaults["calc__echo"], defaults["calc__write_marker"]) == ("ASK_USER", "ALLOW", "ASK_USER")
    assert {d for name, d in defaults.items() if name.startswith("safe__")} == {"ALLOW"}
    assert any(r["source"] == "excluded tools" and r["toolName"] == "list_files" for r in rules)
    table = cli("policy", "list", "w1", env=admin_env).stdout
    assert "admin.toml" in table


def test_mode_is_the_worlds_unless_given(cli: Any, script: Any, world: Path) -> None:
    cli("world", "update", "w1", "--mode", "yolo")

    def tested(*extra: str) -> str:
        args = ("policy", "test", "w1", "--tool", "calc__add", "--args", '{"a": 2, "b": 40}', *extra, "--json")
        return str(cli(*args).json()["decision"])

    assert (tested(), tested("--mode", "default")) == ("ALLOW", "ASK_USER")
    script.by_agent["a1"] = calls_then_answer(ToolCallSpec(name="calc__add", arguments='{"a": 2, "b": 40}'))
    sent = cli("send", "w1", "@a1 add", "--json").json()
    assert sent["pendingApprovals"] == []
    assert any(m["role"] == "tool" and "42" in m["content"] for m in sent["messages"])


def test_a_world_that_nobody_answers_denies_in_both(cli: Any, script: Any, world: Path) -> None:
    tested = cli("policy", "test", "w1", "--tool", "calc__add", "--args", '{"a": 1, "b": 1}', "--non-interactive",
                 "--json").json()
    assert (tested["decision"], tested["by"]) == ("DENY", "nobody to ask")
    script.by_agent["a1"] = calls_then_answer(ToolCallSpec(name="calc__add", arguments='{"a": 1, "b": 1}', id="c1"))
    refused = cli("send", "w1", "@a1 add", "--non-interactive", "--json", check=False)
    assert refused.code == 3  # a call was refused: the exit status says so
    sent = refused.json()
    (result,) = [m for m in sent["messages"] if m["role"] == "tool"]
    assert sent["pendingApprovals"] == [] and json.loads(result["content"])["error"] == tested["reason"]
