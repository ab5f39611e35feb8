"""REST round trips against the real server: the documents are the CLI's ``--json`` documents,
errors are ``{"error": {"code", "message"}}`` with the status that says why."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import httpx
from http_harness import Served, make_world, server_env

from agentworld.testing.openai_wire import OpenAIWireServer


def cli_json(served: Served, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", served.db_url, *args, "--json"],
        env=server_env(served.home), capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def error_of(answer: httpx.Response) -> tuple[int, str]:
    body = answer.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return answer.status_code, body["error"]["code"]


def test_worlds_agents_and_chats_round_trip_as_the_cli_prints_them(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    created = api.post("/api/worlds", json={"name": world_name, "turnLimit": 3, "description": "d"})
    assert created.status_code == 201
    assert error_of(api.post("/api/worlds", json={"name": world_name})) == (409, "already_exists")
    changed = api.patch(f"/api/worlds/{world_name}", json={"turnLimit": 4})
    assert changed.json()["turnLimit"] == 4
    agent = api.post(f"/api/worlds/{world_name}/agents",
                     json={"name": "a1", "provider": "scripted", "model": "echo", "temperature": 0.5})
    assert agent.status_code == 201
    assert api.patch(f"/api/worlds/{world_name}/agents/a1", json={"systemPrompt": "hi"}).json()["systemPrompt"] == "hi"
    chat = api.post(f"/api/worlds/{world_name}/chats").json()["chatId"]
    renamed = api.patch(f"/api/worlds/{world_name}/chats/{chat}", json={"name": "Plans", "current": True})
    assert renamed.json()["name"] == "Plans"
    assert renamed.json()["current"] is True  # each chat document says whether it is current
    assert api.get(f"/api/worlds/{world_name}/chats/{chat}").json()["current"] is True
    assert [c["current"] for c in api.get(f"/api/worlds/{world_name}/chats").json()["chats"]] == [True]

    assert api.get(f"/api/worlds/{world_name}").json() == cli_json(served, "world", "show", world_name)
    assert api.get(f"/api/worlds/{world_name}/agents").json() == cli_json(served, "agent", "list", world_name)
    assert api.get(f"/api/worlds/{world_name}/agents/a1").json() == cli_json(served, "agent", "show", world_name, "a1")
    assert api.get(f"/api/worlds/{world_name}/chats").json() == cli_json(served, "chat", "list", world_name)
    assert world_name in [w["name"] for w in api.get("/api/worlds").json()["worlds"]]

    assert api.delete(f"/api/worlds/{world_name}/chats/{chat}").status_code == 204
    assert api.delete(f"/api/worlds/{world_name}/agents/a1").status_code == 204
    assert error_of(api.get(f"/api/worlds/{world_name}/agents/a1")) == (404, "not_found")
    assert api.delete(f"/api/worlds/{world_name}").status_code == 204
    assert error_of(api.get(f"/api/worlds/{world_name}")) == (404, "not_found")


def test_bad_input_is_a_4xx_naming_the_problem(api: httpx.Client, world_name: str) -> None:
    assert error_of(api.post("/api/worlds", json={"name": "no spaces"}))[0] == 400
    assert error_of(api.post("/api/worlds", json={"name": world_name, "turnLimit": 0})) == (400, "invalid_input")
    assert error_of(api.post("/api/worlds", json={"name": world_name, "bogus": 1})) == (422, "validation_error")
    api.post("/api/worlds", json={"name": world_name})
    agent = {"name": "a1", "provider": "nobody", "model": "m"}
    assert error_of(api.post(f"/api/worlds/{world_name}/agents", json=agent))[0] == 422
    posted = api.post(f"/api/worlds/{world_name}/chats/chat_nope/messages", json={"text": "hi"})
    assert error_of(posted) == (404, "not_found")
    assert error_of(api.get("/api/nothing/here")) == (404, "not_found")
    assert error_of(api.put("/api/worlds", json={}))[0] == 405


def test_the_transcript_pages_and_exports(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    chat = make_world(api, world_name, llm)  # no agents: messages are only stored
    for n in range(5):
        assert api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": f"m{n}"}).status_code == 202
    first = api.get(f"/api/worlds/{world_name}/chats/{chat}/messages", params={"limit": 2}).json()
    rest = api.get(f"/api/worlds/{world_name}/chats/{chat}/messages", params={"after": first["nextAfter"]}).json()
    assert [m["content"] for m in first["messages"] + rest["messages"]] == [f"m{n}" for n in range(5)]
    assert rest["messages"] == cli_json(served, "messages", world_name, "--chat", chat)["messages"][2:]
    exported = api.get(f"/api/worlds/{world_name}/chats/{chat}/export")
    assert exported.headers["content-type"].startswith("text/markdown")
    assert "m4" in exported.text and exported.text.startswith("# ")
    status = api.get(f"/api/worlds/{world_name}/status").json()
    assert status["chats"][0]["chatId"] == chat and status["chats"][0]["state"] in ("idle", "running", "queued")


def test_policy_grants_audit_tool_logs_and_tools(api: httpx.Client, world_name: str) -> None:
    api.post("/api/worlds", json={"name": world_name})
    verdict = api.post(f"/api/worlds/{world_name}/policy/test",
                       json={"tool": "shell_cmd", "args": {"command": "rm -rf /"}}).json()
    assert verdict["decision"] in ("DENY", "ASK_USER")
    assert api.get(f"/api/worlds/{world_name}/policy/rules").json()["rules"]
    assert api.get(f"/api/worlds/{world_name}/grants").json() == {"grants": []}
    assert error_of(api.delete(f"/api/worlds/{world_name}/grants/nope")) == (404, "not_found")
    assert api.get(f"/api/worlds/{world_name}/audit").json() == {"audit": []}
    assert api.get(f"/api/worlds/{world_name}/tool-logs").json() == {"toolLogs": []}
    assert api.get(f"/api/worlds/{world_name}/pending-calls").json() == {"pendingToolCalls": []}
    names = [t["name"] for t in api.get(f"/api/worlds/{world_name}/tools").json()["tools"]]
    assert "shell_cmd" in names


def test_a_world_is_found_in_any_case_as_on_the_command_line(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    stored = world_name.capitalize() + "Case"
    assert api.post("/api/worlds", json={"name": stored}).status_code == 201
    typed = stored.upper()
    assert error_of(api.post("/api/worlds", json={"name": typed})) == (409, "already_exists")
    assert api.get(f"/api/worlds/{typed}").json()["name"] == stored
    assert api.post(f"/api/worlds/{typed}/agents", json={"name": "a1", "provider": "scripted", "model": "echo"}).status_code == 201
    chat = api.post(f"/api/worlds/{stored.lower()}/chats").json()["chatId"]
    posted = api.post(f"/api/worlds/{typed}/chats/{chat}/messages", json={"text": "@a1 hi"})
    assert posted.status_code == 202
    assert cli_json(served, "chat", "list", stored)["chats"][0]["chatId"] == chat
    assert api.get(f"/api/worlds/{stored.lower()}/agents").json() == cli_json(served, "agent", "list", stored)
    assert api.get(f"/api/worlds/{typed}/agents/A1").json()["name"] == "a1"
    assert api.delete(f"/api/worlds/{typed}").status_code == 204
    assert error_of(api.get(f"/api/worlds/{stored}")) == (404, "not_found")


def test_concurrent_creations_of_one_name_in_two_cases_make_one_world(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    async def create_all(names: list[str]) -> list[int]:
        async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as client:
            answers = await asyncio.gather(*(client.post("/api/worlds", json={"name": n}) for n in names))
        return sorted(answer.status_code for answer in answers)

    for round_ in range(5):
        name = f"{world_name}r{round_}"
        assert asyncio.run(create_all([name, name.upper()] * 5)) == [201] + [409] * 9
    listed = [w["name"].lower() for w in api.get("/api/worlds").json()["worlds"]]
    assert sorted(n for n in listed if n.startswith(world_name.lower())) == [
        f"{world_name}r{round_}".lower() for round_ in range(5)
    ]


def test_an_encoded_slash_names_nothing_and_long_input_is_not_echoed_in_full(
    api: httpx.Client, world_name: str
) -> None:
    assert api.post("/api/worlds", json={"name": world_name}).status_code == 201
    assert api.get(f"/api/worlds/{world_name}/agents").status_code == 200

    assert error_of(api.get(f"/api/worlds/{world_name}%2Fagents")) == (404, "not_found")
    assert error_of(api.get(f"/api/worlds/{world_name}%2fagents")) == (404, "not_found")
    long_name = "x" * 10_000
    refused = api.post("/api/worlds", json={"name": long_name})
    assert error_of(refused)[0] == 400
    assert "xxxx" in refused.json()["error"]["message"] and len(refused.text) < 1000
