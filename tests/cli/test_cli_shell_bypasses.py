"""Hostile shell lines from a scripted model, through the CLI (issue: what a person approves is
exactly what runs). Acceptance 1: with only echo/ls/cat allowed nothing else runs unasked;
acceptance 2: a DENY rule for touch is not dodged, in any mode."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

ALLOW_HARMLESS = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["echo", "ls", "cat"]
decision = "allow"
priority = 100
"""
DENY_TOUCH = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["touch", "rm"]
decision = "deny"
priority = 200
"""
HOSTILE = [
    "echo ${PWD#$(touch P)}",
    'echo "${PWD#$(touch P)}"',
    "echo $((1+$(touch P)))",
    "echo `echo \\`touch P\\``",
    "ls &>/dev/null touch P; sh -c 'ls &>/dev/null touch P'",
    "$(printf touch) P",
    "/usr/bin/tou[c]h P",
    "{touch,P}",
    "ionice -c 3 touch P",
    "taskset 1 touch P",
    "flock /tmp/aw.lock touch P",
    "chrt 0 touch P",
    "setpriv touch P",
    "prlimit touch P",
    "script -q -c 'touch P' /dev/null",
    "echo touch P | sh",
    "sh <<EOF\ntouch P\nEOF",
    "alias ls='touch P'",
    "trap 'touch P' EXIT",
    "printf -v 'a[$(touch P)]' 1",
    "./touch P",
    "PATH=/usr/bin touch P",
]


def shell_then_answer(command: str) -> Any:
    def respond(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("done")
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": command})))

    return respond


@pytest.fixture
def world(cli: Any, server: OpenAIWireServer, tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW_HARMLESS + DENY_TOUCH)
    cli("world", "create", "w1", "--working-dir", str(work), "--policy", str(policy))
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    return work


@pytest.mark.parametrize("mode", ["default", "yolo"])
def test_hostile_lines_never_run_a_hidden_command(
    cli: Any, script: Any, world: Path, mode: str, db_url: str
) -> None:
    cli("world", "update", "w1", "--mode", mode)
    # One line per class through the whole CLI (model -> policy -> approval/tool -> storage)...
    for command in HOSTILE[::3]:
        script.by_agent["a1"] = shell_then_answer(command)
        sent = cli("send", "w1", "@a1 go", "--json").json()
        assert not (world / "P").exists(), (mode, command)
        assert sent["pendingApprovals"] or "denied" in json.dumps(sent["messages"]), command
    # ... and every line through what `policy test WORLD` asks: the runtime's own evaluation.
    async def decisions() -> dict[str, str]:
        async with AgentWorld(db_url) as aw:
            return {
                command: (await aw.check_tool_call("w1", "shell_cmd", {"command": command})).decision
                for command in HOSTILE
            }

    for command, decision in asyncio.run(decisions()).items():
        assert decision in ("ASK_USER", "DENY"), (mode, command, decision)


def test_an_allowed_line_runs_and_the_provider_key_is_not_visible_to_it(
    cli: Any, script: Any, world: Path
) -> None:
    script.by_agent["a1"] = shell_then_answer("echo key=$OPENAI_API_KEY; ls")
    sent = cli("send", "w1", "@a1 go", "--json", env={"OPENAI_API_KEY": "sk-test-" + "x" * 30}).json()
    (result,) = [m for m in sent["messages"] if m["role"] == "tool"]
    output = json.loads(result["content"])
    assert output["exit_code"] == 0 and "key=\n" in output["stdout"]
    assert "sk-test-" not in json.dumps(sent)
