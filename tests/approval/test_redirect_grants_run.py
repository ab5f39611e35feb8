"""Through the runtime: approving ``echo note > notes.txt`` for the session or always lets
that file be written again unasked, and nothing else (SPEC C3); a grant stored without
targets covers no writing line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.approval.grants import Grant
from agentworld.testing.openai_wire import Reply, ToolCallSpec


class Model:
    """Answers each user message with the next planned shell command; tool results in text."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("done")
        if not self.commands:
            return Reply.text("nothing to do")
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": self.commands.pop(0)})))


@pytest.fixture
def model(script: Any) -> Model:
    planned = Model()
    script.by_agent["a1"] = planned
    script.by_agent["a2"] = planned
    return planned


@pytest.fixture
async def work(make_world: Any, tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    await make_world("a1", "a2", working_dir=str(tmp_path / "work"))
    return tmp_path / "work"


async def ask(aw: AgentWorld, model: Model, command: str, *, to: str = "a1", chat: str | None = None) -> Any:
    model.commands.append(command)
    return await aw.send("w", f"@{to} please", chat_id=chat)


@pytest.mark.parametrize("scope", ["session", "always"])
async def test_an_approved_redirect_covers_its_file_and_nothing_beyond(
    aw: AgentWorld, model: Model, work: Path, tmp_path: Path, scope: str
) -> None:
    first = await ask(aw, model, "echo note > notes.txt")
    (pending,) = first.pending_approvals
    await aw.approve("w", pending.tool_call_id, decision="approve", scope=scope)  # type: ignore[arg-type]
    assert (work / "notes.txt").read_text() == "note\n"
    (grant,) = await aw.grants("w")
    assert grant.redirect_targets == frozenset({"notes.txt"})

    again = await ask(aw, model, "echo more >> notes.txt", chat=first.chat_id)
    assert again.pending_approvals == [] and (work / "notes.txt").read_text() == "note\nmore\n"

    for line in ("echo x >> ../bashrc", "echo x > sub.txt", f"echo x > {tmp_path}/outside.txt"):
        asked = await ask(aw, model, line, chat=first.chat_id)
        assert line in [p.tool_args["command"] for p in asked.pending_approvals], line
    assert not (tmp_path / "bashrc").exists() and not (work / "sub.txt").exists()
    assert not (tmp_path / "outside.txt").exists()


async def test_a_session_redirect_grant_does_not_reach_another_agent_or_chat(
    aw: AgentWorld, model: Model, work: Path
) -> None:
    first = await ask(aw, model, "echo note > notes.txt")
    await aw.approve("w", first.pending_approvals[0].tool_call_id, decision="approve", scope="session")

    other_agent = await ask(aw, model, "echo x > notes.txt", to="a2", chat=first.chat_id)
    other_chat = await ask(aw, model, "echo x > notes.txt", chat=(await aw.new_chat("w")).chat_id)

    assert len(other_agent.pending_approvals) == 1 and len(other_chat.pending_approvals) == 1
    assert (work / "notes.txt").read_text() == "note\n"


async def test_an_always_redirect_grant_is_listed_with_its_targets_and_decided_by_policy_test(
    aw: AgentWorld, model: Model, work: Path
) -> None:
    first = await ask(aw, model, "echo note > notes.txt")
    await aw.approve("w", first.pending_approvals[0].tool_call_id, decision="approve", scope="always")

    (rule,) = [r for r in await aw.policy_rules("w") if r.from_approval]
    same = await aw.check_tool_call("w", "shell_cmd", {"command": "echo x > notes.txt"})
    outside = await aw.check_tool_call("w", "shell_cmd", {"command": "echo x >> ~/.bashrc"})

    assert rule.name == "always allow shell_cmd (may write notes.txt)" and not rule.allow_redirection
    assert (same.decision.value, same.by) == ("ALLOW", "always approval")
    assert same.grant is not None and same.grant.redirect_targets == frozenset({"notes.txt"})
    assert outside.decision.value == "ASK_USER"


async def test_an_always_redirect_grant_never_beats_a_deny_rule_for_its_file(
    aw: AgentWorld, model: Model, work: Path, tmp_path: Path
) -> None:
    first = await ask(aw, model, "echo note > notes.txt")
    await aw.approve("w", first.pending_approvals[0].tool_call_id, decision="approve", scope="always")
    deny = tmp_path / "deny.toml"
    deny.write_text("[[rule]]\ntoolName = \"shell_cmd\"\nargsPattern = 'notes'\ndecision = \"deny\"\npriority = 1\n")
    await aw.update_world("w", policy_files=[str(deny)])

    verdict = await aw.check_tool_call("w", "shell_cmd", {"command": "echo x > notes.txt"})

    assert verdict.decision.value == "DENY"


async def test_a_grant_stored_without_targets_asks_again_for_a_writing_line(
    aw: AgentWorld, model: Model, work: Path
) -> None:
    """A grant stored without targets says only "redirection allowed": it covers the
    commands, never a write."""
    chat = (await ask(aw, model, "echo hello")).chat_id
    for pending in await aw.approvals("w"):
        await aw.approve("w", pending.tool_call_id, decision="deny")
    await aw.storage.approvals.add_grant(
        Grant(grant_id="grant_old", world="w", scope="session", tool_name="shell_cmd", agent="a1",
              chat_id=chat, roots=frozenset({"echo"}), allow_redirection=True)
    )

    plain = await ask(aw, model, "echo plain", chat=chat)
    writing = await ask(aw, model, "echo x > notes.txt", chat=chat)

    assert plain.pending_approvals == []
    assert len(writing.pending_approvals) == 1 and not (work / "notes.txt").exists()
