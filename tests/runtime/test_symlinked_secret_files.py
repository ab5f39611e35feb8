"""A file tool's call is judged by the file it really opens, not only by the name it gives.

Black-box: with ``.env`` and ``notes.txt -> .env`` in the working directory, ``read_file
{"path": "notes.txt"}`` was allowed by the shipped defaults and the keys went to the model,
while ``read_file .env`` is asked about. Real files and symlinks in a temp dir, the real
authorizer (``check_tool_call``, what ``policy test`` prints) and a real run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentworld.agent_world import AgentWorld
from agentworld.policy.rules import PolicyDecision
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

ASK, ALLOW, DENY = PolicyDecision.ASK_USER, PolicyDecision.ALLOW, PolicyDecision.DENY
SECRET = "DB_PASSWORD=hunter2hunter2\n"
DENY_PRIVATE = """
[[rule]]
toolName = ["read_file", "list_files"]
argsPattern = '"path":"private(/|")'
decision = "deny"
priority = 900
"""


def _workspace(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    (root / ".env").write_text(SECRET)
    (root / "notes.txt").symlink_to(".env")
    (root / "readme.md").write_text("hello\n")
    (root / "docs").mkdir()
    (root / "docs" / "intro.md").symlink_to("../readme.md")
    (root / "private").mkdir()
    (root / "private" / "plan.txt").write_text("plan\n")
    (root / "public").symlink_to("private")
    return root


async def test_a_symlink_to_dot_env_is_asked_about_like_dot_env(
    aw: AgentWorld, make_world: Any, tmp_path: Path
) -> None:
    await make_world("a1", working_dir=str(_workspace(tmp_path)))

    verdict = await aw.check_tool_call("w", "read_file", {"path": "notes.txt"})
    assert verdict.decision is ASK
    assert verdict.rule is not None and verdict.rule.name == "files that hold secrets need a person"
    assert "'notes.txt' opens '.env'" in verdict.reason
    absolute = await aw.check_tool_call("w", "read_file", {"path": str(tmp_path / "notes.txt")})
    assert absolute.decision is ASK


async def test_ordinary_files_and_links_stay_allowed(aw: AgentWorld, make_world: Any, tmp_path: Path) -> None:
    await make_world("a1", working_dir=str(_workspace(tmp_path)))

    for path in ("readme.md", "docs/intro.md", "docs/../readme.md"):
        assert (await aw.check_tool_call("w", "read_file", {"path": path})).decision is ALLOW, path
    assert (await aw.check_tool_call("w", "list_files", {"path": "docs"})).decision is ALLOW


async def test_a_deny_rule_sees_through_a_linked_directory(
    aw: AgentWorld, make_world: Any, tmp_path: Path
) -> None:
    policy = tmp_path / "deny.toml"
    policy.write_text(DENY_PRIVATE)
    work = _workspace(tmp_path / "work")
    await make_world("a1", working_dir=str(work), policy_files=[str(policy)])

    assert (await aw.check_tool_call("w", "read_file", {"path": "public/plan.txt"})).decision is DENY
    assert (await aw.check_tool_call("w", "list_files", {"path": "public"})).decision is DENY


async def test_the_runtime_waits_for_a_person_and_shows_the_call_as_made(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    await make_world("a1", working_dir=str(_workspace(tmp_path)))

    def read_notes(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("done")
        return Reply.tools(ToolCallSpec(name="read_file", arguments='{"path": "notes.txt"}'))

    script.by_agent["a1"] = read_notes
    sent = await aw.send("w", "@a1 read the notes", timeout=30)

    (waiting,) = await aw.approvals("w")
    assert (waiting.tool_name, waiting.tool_args) == ("read_file", {"path": "notes.txt"})
    assert not any("hunter2hunter2" in (m.content or "") for m in sent.messages)
    assert "hunter2hunter2" not in json.dumps(server.requests)
