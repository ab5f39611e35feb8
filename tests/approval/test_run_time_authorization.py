"""An approved call is authorized again when it runs (SPEC C3): a DENY rule the owner added
while it waited wins, whatever the person answered; nothing runs, the model reads the denial,
and the audit log records it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.models.events import ToolEvent, WorldEvent
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

DENY_TOUCH = """
[[rule]]
name = "no touching"
toolName = "shell_cmd"
commandPrefix = "touch"
decision = "deny"
priority = 100
denyMessage = "touch is forbidden here"
"""


class Model:
    """Answers a user message with the next planned shell command; tool results in text."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("saw: " + body["messages"][-1]["content"])
        if not self.commands:
            return Reply.text("nothing to do")
        command = self.commands.pop(0)
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": command}), id="call_touch"))


@pytest.fixture
def model(script: Any) -> Model:
    planned = Model()
    script.by_agent["a1"] = planned
    return planned


@pytest.fixture
async def policy(make_world: Any, tmp_path: Path) -> Path:
    """The world's own policy file, holding nothing about ``touch`` yet."""
    owner = tmp_path / "owner.toml"
    owner.write_text('[[rule]]\ntoolName = "shell_cmd"\ncommandPrefix = "ls"\ndecision = "allow"\npriority = 1\n')
    (tmp_path / "work").mkdir()
    await make_world("a1", working_dir=str(tmp_path / "work"), policy_files=[str(owner)])
    return owner


def append_from_another_process(path: Path, text: str) -> None:
    """The owner edits the policy file: a separate process, as an editor or a script is."""
    code = "import sys; open(sys.argv[1], 'a').write(sys.argv[2])"
    subprocess.run([sys.executable, "-c", code, str(path), text], check=True)


@pytest.mark.parametrize("scope", ["once", "session", "always"])
async def test_a_deny_rule_added_while_the_call_waited_stops_the_approved_call(
    aw: AgentWorld, policy: Path, model: Model, tmp_path: Path, scope: str
) -> None:
    model.commands.append("touch made.txt")
    (pending,) = (await aw.send("w", "@a1 make it")).pending_approvals
    append_from_another_process(policy, DENY_TOUCH)
    events: list[WorldEvent] = []
    (await aw.runtime("w")).bus.subscribe(events.append, kinds=["tool"])

    result = await aw.approve("w", pending.tool_call_id, decision="approve", scope=scope)  # type: ignore[arg-type]

    assert not (tmp_path / "work" / "made.txt").exists()
    (denial,) = [m for m in result.messages if m.tool_call_id == "call_touch"]
    assert json.loads(denial.content or "{}") == {"error": "touch is forbidden here"}
    assert result.messages[-1].content == 'saw: {"error": "touch is forbidden here"}'
    tool_events = [e for e in events if isinstance(e, ToolEvent) and e.tool_call_id == "call_touch"]
    assert [(e.phase, e.detail.get("deniedBy")) for e in tool_events] == [("error", "policy")]
    assert await aw.tool_logs("w") == []  # nothing started
    (entry,) = [e for e in await aw.audit_log("w") if e.event == "policy"]
    assert (entry.actor, entry.decision, entry.approval_id) == ("policy", "deny", pending.tool_call_id)
    assert entry.detail is not None and entry.detail["when"] == "run"
    assert entry.detail["rule"]["name"] == "no touching"


async def test_without_a_new_deny_rule_the_approved_call_runs(
    aw: AgentWorld, policy: Path, model: Model, tmp_path: Path
) -> None:
    model.commands.append("touch made.txt")
    (pending,) = (await aw.send("w", "@a1 make it")).pending_approvals
    append_from_another_process(policy, DENY_TOUCH.replace('"touch"', '"rm"'))

    await aw.approve("w", pending.tool_call_id, decision="approve")

    assert (tmp_path / "work" / "made.txt").exists()
    assert [e for e in await aw.audit_log("w") if e.event == "policy"] == []


async def test_an_approved_call_runs_when_nobody_could_be_asked_any_more(
    aw: AgentWorld, policy: Path, model: Model, tmp_path: Path
) -> None:
    """At run time ASK_USER is what the person has just answered: a world made
    non-interactive meanwhile refuses calls nobody approved, not this one."""
    model.commands.append("touch made.txt")
    (pending,) = (await aw.send("w", "@a1 make it")).pending_approvals
    await aw.update_world("w", non_interactive=True)

    await aw.approve("w", pending.tool_call_id, decision="approve")

    assert (tmp_path / "work" / "made.txt").exists()


async def test_a_new_admin_deny_file_stops_the_approved_call(
    aw: AgentWorld, policy: Path, model: Model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model.commands.append("touch made.txt")
    (pending,) = (await aw.send("w", "@a1 make it")).pending_approvals
    admin = tmp_path / "admin.toml"
    admin.write_text(DENY_TOUCH)
    monkeypatch.setenv("AGENTWORLD_ADMIN_POLICY", str(admin))

    await aw.approve("w", pending.tool_call_id, decision="approve", scope="always")

    assert not (tmp_path / "work" / "made.txt").exists()
    assert [e.actor for e in await aw.audit_log("w") if e.event == "policy"] == ["policy"]


def test_through_the_cli_a_deny_rule_added_by_another_process_wins(
    cli: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    """Every step a separate ``agentworld`` process on the same database: the request, the
    owner's new policy file, the approval."""
    planned = Model()
    script.by_agent["a1"] = planned
    work = tmp_path / "work"
    work.mkdir()
    cli("world", "create", "w1", "--working-dir", str(work))
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    planned.commands.append("touch made.txt")
    (approval,) = cli("send", "w1", "@a1 please", "--json").json()["pendingApprovals"]
    deny = tmp_path / "deny.toml"
    deny.write_text(DENY_TOUCH)
    cli("world", "update", "w1", "--policy", str(deny))

    done = cli("approve", "w1", approval["approvalId"], "--decision", "approve", "--scope", "session", "--json").json()

    assert not (work / "made.txt").exists()
    assert done["pendingApprovals"] == []
    assert any("touch is forbidden here" in (m.get("content") or "") for m in done["messages"])
    audit = cli("audit", "w1", "--json").json()["audit"]
    (entry,) = [e for e in audit if e["event"] == "policy"]
    assert (entry["actor"], entry["decision"], entry["approvalId"]) == ("policy", "deny", approval["approvalId"])
    assert entry["detail"]["when"] == "run"
