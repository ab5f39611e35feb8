"""A file change approved over HTTP (SPEC F1): the diff is in the approval document and in the
`approval` event's request, approving writes exactly that, and a file changed since it was
shown is not written (on both backends, through `agentworld serve`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_harness import LLMScript, Served, SSEClient, is_message, make_world

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)

BEFORE = "# Notes\nAgent World is teh runtime.\nEnd.\n"
DIFF = (
    "--- a/notes.md\n+++ b/notes.md\n@@ -1,3 +1,3 @@\n # Notes\n"
    "-Agent World is teh runtime.\n+Agent World is the runtime.\n End.\n"
)


def fixer(body: dict[str, Any]) -> Reply:
    """Fixes the typo once; then reports the tool's result."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply.text("done: " + last["content"])
    edit = {"path": "notes.md", "old": "teh runtime", "new": "the runtime"}
    return Reply.tools(ToolCallSpec(name="edit_file", arguments=json.dumps(edit)))


def ask(api: httpx.Client, served: Served, llm: OpenAIWireServer, script: LLMScript, world: str,
        work: Path) -> tuple[SSEClient, dict[str, Any]]:
    work.mkdir()
    (work / "notes.md").write_text(BEFORE)
    chat = make_world(api, world, llm, "fixer", workingDir=str(work))
    script.by_agent[f"{world}/fixer"] = fixer
    stream = SSEClient(f"{served.base_url}/api/worlds/{world}/events")
    api.post(f"/api/worlds/{world}/chats/{chat}/messages", json={"text": "@fixer fix the typo"})
    request = stream.wait_for(lambda f: f.event == "approval" and f.data["phase"] == "requested")
    return stream, request.data


def test_the_diff_is_what_is_approved_and_written_over_http(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript,
    world_name: str, tmp_path: Path,
) -> None:
    work = tmp_path / world_name
    stream, request = ask(api, served, llm, script, world_name, work)
    with stream:
        assert request["detail"]["diff"] == DIFF
        (approval,) = api.get(f"/api/worlds/{world_name}/approvals").json()["approvals"]
        assert (approval["toolName"], approval["diff"]) == ("edit_file", DIFF)
        assert (work / "notes.md").read_text() == BEFORE

        answered = api.post(f"/api/worlds/{world_name}/approvals/{approval['approvalId']}", json={"decision": "approve"})

        assert answered.status_code == 200, answered.text
        assert (work / "notes.md").read_text() == BEFORE.replace("teh", "the")
        stream.wait_for(is_message("fixer", "done: "))
        last = answered.json()["messages"][-1]["content"]
        assert json.loads(last.removeprefix("done: ")) == {"path": "notes.md", "created": False, "changed": "+1 -1 lines"}


def test_a_file_changed_before_the_answer_is_not_written_over_http(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript,
    world_name: str, tmp_path: Path,
) -> None:
    work = tmp_path / world_name
    stream, request = ask(api, served, llm, script, world_name, work)
    with stream:
        (work / "notes.md").write_text(BEFORE + "Someone else's line.\n")

        answered = api.post(f"/api/worlds/{world_name}/approvals/{request['approvalId']}", json={"decision": "approve"})

        assert answered.status_code == 200, answered.text
        assert (work / "notes.md").read_text() == BEFORE + "Someone else's line.\n"
        assert "the file changed since it was shown; nothing written" in answered.json()["messages"][-1]["content"]
