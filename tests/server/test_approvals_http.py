"""Approvals over HTTP against the real server (issue acceptance 2): the request is broadcast on
the event stream, the answer runs the tool and the loop, a second answer is a 409; an answer
from the CLI in another process closes it on the stream too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_harness import LLMScript, Served, SSEClient, is_message, make_world, server_env

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)


def shell_agent(command: str) -> Any:
    """Asks to run ``command`` once; then reports the tool's result."""

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text("done: " + last["content"])
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": command})))

    return answer


def ask(api: httpx.Client, served: Served, llm: OpenAIWireServer, script: LLMScript, world: str,
        tmp_path: Path, command: str) -> tuple[str, SSEClient, dict[str, Any]]:
    work = tmp_path / world
    work.mkdir()
    chat = make_world(api, world, llm, "ops", workingDir=str(work))
    script.by_agent[f"{world}/ops"] = shell_agent(command)
    stream = SSEClient(f"{served.base_url}/api/worlds/{world}/events")
    api.post(f"/api/worlds/{world}/chats/{chat}/messages", json={"text": "@ops please"})
    request = stream.wait_for(lambda f: f.event == "approval" and f.data["phase"] == "requested")
    return chat, stream, request.data


def test_an_approval_answered_over_http_runs_the_tool_and_is_broadcast(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript,
    world_name: str, tmp_path: Path,
) -> None:
    chat, stream, request = ask(api, served, llm, script, world_name, tmp_path, "touch made")
    with stream, SSEClient(f"{served.base_url}/api/worlds/{world_name}/events?chat={chat}") as other:
        listed = api.get(f"/api/worlds/{world_name}/approvals").json()["approvals"]
        (approval,) = listed
        assert approval["approvalId"] == request["approvalId"]
        assert set(approval) == {
            "approvalId", "agent", "chatId", "toolName", "toolArgs", "message", "createdAt", "sandbox",
            "diff",
        }
        assert approval["sandbox"]["active"] is True and approval["sandbox"]["network"] == "deny"
        assert api.get(f"/api/worlds/{world_name}/approvals", params={"chat": chat}).json()["approvals"] == listed

        answered = api.post(
            f"/api/worlds/{world_name}/approvals/{approval['approvalId']}", json={"decision": "approve"}
        )

        assert answered.status_code == 200, answered.text
        doc = answered.json()
        assert set(doc) == {"chatId", "messages", "pendingApprovals", "pendingQuestions"} and doc["pendingApprovals"] == []
        assert (tmp_path / world_name / "made").exists()
        assert doc["messages"][-1]["content"].startswith("done: ")
        for client in (stream, other):  # every client sees the answer and what followed
            client.wait_for(lambda f: f.event == "approval" and f.data["phase"] == "answered")
            client.wait_for(is_message("ops", "done: "))
        again = api.post(
            f"/api/worlds/{world_name}/approvals/{approval['approvalId']}", json={"decision": "deny"}
        )
        assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
        assert api.get(f"/api/worlds/{world_name}/approvals").json() == {"approvals": []}


def test_unknown_ids_and_bad_decisions_are_refused(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    make_world(api, world_name, llm, "ops")
    unknown = api.post(f"/api/worlds/{world_name}/approvals/approval_nope", json={"decision": "approve"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    bad = api.post(f"/api/worlds/{world_name}/approvals/approval_nope", json={"decision": "maybe"})
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "validation_error"
    no_world = api.post("/api/worlds/nowhere/approvals/approval_x", json={"decision": "deny"})
    assert no_world.status_code == 404


def test_an_approval_answered_from_the_cli_shows_on_the_stream(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript,
    world_name: str, tmp_path: Path,
) -> None:
    _chat, stream, request = ask(api, served, llm, script, world_name, tmp_path, "touch from-cli")
    with stream:
        done = subprocess.run(
            [sys.executable, "-m", "agentworld", "--db", served.db_url, "approve", world_name,
             request["approvalId"], "--decision", "deny", "--json"],
            env=server_env(served.home), capture_output=True, text=True, timeout=60,
        )
        assert done.returncode == 0, done.stderr
        stream.wait_for(lambda f: f.event == "approval" and f.data["phase"] == "answered")
        stream.wait_for(lambda f: f.event == "message" and "denied" in (f.data["message"]["content"] or ""))
    assert not (tmp_path / world_name / "from-cli").exists()
    again = api.post(f"/api/worlds/{world_name}/approvals/{request['approvalId']}", json={"decision": "approve"})
    assert again.status_code == 409
