"""Correcting a call while approving it over HTTP (SPEC F2): ``{"decision": "approve", "args"}``
against the real server, on SQLite and on PostgreSQL. The correction runs in the world's working
directory, the model is told, the audit log and the event stream keep both; a correction a DENY
rule of the world's policy matches is 403 ``denied_by_policy``, one the tool refuses 422
``invalid_input``, and either way the request still waits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_harness import LLMScript, Served, SSEClient, make_world, refusal

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)

DENY_CURL = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = "curl"
decision = "deny"
priority = 900
name = "no-curl"
"""


class Planned:
    """Asks to run the next planned command on each person's message; reports results back."""

    def __init__(self, *commands: str) -> None:
        self.commands = list(commands)

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("saw: " + body["messages"][-1]["content"])
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": self.commands.pop(0)})))


def ask(
    api: httpx.Client, served: Served, llm: OpenAIWireServer, script: LLMScript, world: str,
    tmp_path: Path, *commands: str,
) -> tuple[Path, str, SSEClient, str]:
    """A world whose agent asks to run ``commands[0]``: its working directory (holding
    notes.txt), its chat, a stream of its events and the approval id."""
    work = tmp_path / world
    work.mkdir()
    (work / "notes.txt").write_text("keep me\n")
    policy = tmp_path / f"{world}.toml"
    policy.write_text(DENY_CURL)
    chat = make_world(api, world, llm, "ops", workingDir=str(work), policyFiles=[str(policy)])
    script.by_agent[f"{world}/ops"] = Planned(*commands)
    stream = SSEClient(f"{served.base_url}/api/worlds/{world}/events")
    api.post(f"/api/worlds/{world}/chats/{chat}/messages", json={"text": "@ops tidy up"})
    request = stream.wait_for(lambda f: f.event == "approval" and f.data["phase"] == "requested")
    return work, chat, stream, str(request.data["approvalId"])


def test_a_corrected_call_runs_as_corrected_the_model_is_told_and_the_audit_keeps_both(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript,
    world_name: str, tmp_path: Path,
) -> None:
    work, _chat, stream, approval = ask(api, served, llm, script, world_name, tmp_path, "rm -f notes.txt")
    with stream:
        answered = api.post(
            f"/api/worlds/{world_name}/approvals/{approval}",
            json={"decision": "approve", "args": {"command": "cp notes.txt notes.bak"}},
        )

        assert answered.status_code == 200, answered.text
        assert (work / "notes.txt").exists() and (work / "notes.bak").read_text() == "keep me\n"
        messages = answered.json()["messages"]
        assert messages[-2]["content"].startswith("Note: a person changed this call's arguments")
        assert messages[-1]["content"].startswith("saw: Note: a person changed")
        event = stream.wait_for(lambda f: f.event == "approval" and f.data["phase"] == "answered")
        assert event.data["detail"]["edited"] is True
        assert event.data["detail"]["toolArgs"] == {"command": "cp notes.txt notes.bak"}

    told = [
        r["messages"] for r in llm.requests
        if r["messages"][0]["content"] == f"agent:{world_name}/ops" and r["messages"][-1]["role"] == "tool"
    ][-1]
    assert json.loads(told[-2]["tool_calls"][0]["function"]["arguments"]) == {"command": "cp notes.txt notes.bak"}
    (decision,) = [e for e in api.get(f"/api/worlds/{world_name}/audit").json()["audit"] if e["event"] == "decision"]
    assert decision["toolArgs"] == {"command": "cp notes.txt notes.bak"}
    assert (decision["detail"]["originalArgs"], decision["detail"]["edited"]) == ({"command": "rm -f notes.txt"}, True)


def test_a_correction_the_policy_denies_is_403_and_one_the_tool_refuses_is_422_and_it_still_waits(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript,
    world_name: str, tmp_path: Path,
) -> None:
    work, _chat, stream, approval = ask(api, served, llm, script, world_name, tmp_path, "touch asked")
    stream.close()
    url = f"/api/worlds/{world_name}/approvals/{approval}"

    denied = api.post(url, json={"decision": "approve", "args": {"command": "curl -o got http://example.com"}})
    status, code, message = refusal(denied)
    assert (status, code) == (403, "denied_by_policy") and "no-curl" in message
    for args in ({"cmd": "ls"}, {"command": ["ls"]}, {"command": "ls", "directory": "/etc"}):
        status, code, _message = refusal(api.post(url, json={"decision": "approve", "args": args}))
        assert (status, code) == (422, "invalid_input")
    status, code, message = refusal(api.post(url, json={"decision": "deny", "args": {"command": "ls"}}))
    assert (status, code) == (422, "invalid_input") and "denied call does not run" in message
    not_an_object = api.post(url, json={"decision": "approve", "args": "ls"})
    assert refusal(not_an_object)[:2] == (422, "validation_error")

    assert not (work / "got").exists() and not (work / "asked").exists()
    assert [a["approvalId"] for a in api.get(f"/api/worlds/{world_name}/approvals").json()["approvals"]] == [approval]
    assert api.post(url, json={"decision": "deny"}).status_code == 200
    assert not (work / "asked").exists()


def test_a_session_grant_covers_the_corrected_command_only(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript,
    world_name: str, tmp_path: Path,
) -> None:
    work, chat, stream, approval = ask(
        api, served, llm, script, world_name, tmp_path, "rm -f notes.txt", "touch again", "rm -f notes.txt"
    )
    stream.close()
    answered = api.post(
        f"/api/worlds/{world_name}/approvals/{approval}",
        json={"decision": "approve", "scope": "session", "args": {"command": "touch made"}},
    )
    assert answered.status_code == 200, answered.text
    (grant,) = api.get(f"/api/worlds/{world_name}/grants").json()["grants"]
    assert (grant["scope"], grant["rootCommands"], grant["chatId"]) == ("session", ["touch"], chat)

    def send() -> list[dict[str, Any]]:
        with SSEClient(f"{served.base_url}/api/worlds/{world_name}/events?chat={chat}") as events:
            api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": "@ops more"})
            events.wait_for(lambda f: (f.event == "approval" and f.data["phase"] == "requested")
                            or (f.event == "message" and (f.data["message"]["content"] or "").startswith("saw:")))
        return list(api.get(f"/api/worlds/{world_name}/approvals").json()["approvals"])

    assert send() == [] and (work / "again").exists()
    (waiting,) = send()  # the original command is asked about again
    assert waiting["toolArgs"] == {"command": "rm -f notes.txt"} and (work / "notes.txt").exists()
