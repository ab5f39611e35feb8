"""``GET /api/worlds/{w}/usage`` (SPEC O2): the same document as ``agentworld usage --json``,
the chat and agent documents with their cost, a world's budget over HTTP -- on SQLite and on
PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
from http_harness import LLMScript, Served, SSEClient, is_message, make_world, refusal

from agentworld.testing.openai_wire import OpenAIWireServer, Reply


def cli_usage(served: Served, world: str, *extra: str) -> object:
    env = {**os.environ, "HOME": str(served.home)}
    env.pop("AGENTWORLD_DB", None)
    done = subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", served.db_url, "usage", world, *extra, "--json"],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_usage_is_the_documents_the_cli_prints_with_costs_in_chats_and_agents(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "a1")
    base = f"/api/worlds/{world_name}"
    changed = api.patch(f"{base}/agents/a1", json={"model": "gpt-4o", "budget": 1.5})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["budget"], changed.json()["priceIn"]) == (1.5, None)
    script.by_agent[f"{world_name}/a1"] = lambda body: Reply.text("@human done", prompt_tokens=1000, completion_tokens=100)
    with SSEClient(f"{served.base_url}{base}/events") as stream:
        assert api.post(f"{base}/chats/{chat}/messages", json={"text": "@a1 hi"}).status_code == 202
        stream.wait_for(is_message("a1", "done"))

    usage = api.get(f"{base}/usage")
    of_chat = api.get(f"{base}/usage", params={"chat": chat})

    assert usage.status_code == 200, usage.text
    assert usage.json()["total"] == {
        "calls": 1, "inputTokens": 1000, "outputTokens": 100, "costUsd": 0.0035, "unpricedCalls": 0,
    }  # fmt: skip
    assert usage.json()["byModel"][0]["model"] == "gpt-4o"
    assert usage.json() == cli_usage(served, world_name)
    assert of_chat.json() == cli_usage(served, world_name, "--chat", chat)
    (listed,) = api.get(f"{base}/chats").json()["chats"]
    assert listed["usage"] == {"inputTokens": 1000, "outputTokens": 100, "costUsd": 0.0035, "unpricedCalls": 0}
    assert api.get(f"{base}/chats/{chat}").json()["usage"] == listed["usage"]
    assert api.get(f"{base}/agents/a1").json()["usage"]["costUsd"] == 0.0035


def test_a_world_budget_is_set_and_cleared_and_unknown_chats_are_not_found(
    api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    make_world(api, world_name, llm, "a1", budget=0.25)
    base = f"/api/worlds/{world_name}"
    assert api.get(base).json()["budget"] == 0.25
    assert api.patch(base, json={"budget": None}).json()["budget"] is None
    status, _code, _message = refusal(api.patch(base, json={"budget": -1}))
    assert status == 400
    assert refusal(api.get(f"{base}/usage", params={"chat": "chat_nope"}))[0] == 404
    assert refusal(api.get("/api/worlds/nowhere/usage"))[0] == 404
    empty = api.get(f"{base}/usage").json()
    assert (empty["total"]["calls"], empty["total"]["costUsd"], empty["byAgent"]) == (0, 0.0, [])
