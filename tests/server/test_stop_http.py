"""Stopping a chat's running work over HTTP (the web UI's stop button): the turn in flight is
cancelled, nothing it would have said is stored, the transcript says who stopped it, and a
stop with nothing running changes nothing."""

from __future__ import annotations

import httpx
import pytest
from http_harness import LLMScript, Served, SSEClient, make_world

from agentworld.testing.openai_wire import OpenAIWireServer, Reply

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)


def test_stop_cancels_the_running_turn_and_says_so(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "slow")
    script.by_agent[f"{world_name}/slow"] = lambda body: Reply(content="too late", delay=3.0)
    with SSEClient(f"{served.base_url}/api/worlds/{world_name}/events?chat={chat}") as stream:
        posted = api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": "@slow hi"})
        assert posted.status_code == 202
        stream.wait_for(lambda f: f.event == "sse" and f.data["phase"] == "start")

        stopped = api.post(f"/api/worlds/{world_name}/chats/{chat}/stop")

        assert stopped.status_code == 200, stopped.text
        doc = stopped.json()
        assert doc["chatId"] == chat and doc["stopped"] is True and doc["dropped"] == 1
        note = stream.wait_for(lambda f: f.event == "message" and f.data["message"]["sender"] == "system")
        assert "human stopped" in note.data["message"]["content"]
    messages = api.get(f"/api/worlds/{world_name}/chats/{chat}/messages").json()["messages"]
    assert [m["sender"] for m in messages] == ["human", "system"]  # the slow answer never landed

    again = api.post(f"/api/worlds/{world_name}/chats/{chat}/stop")
    assert again.status_code == 200 and again.json()["stopped"] is False
    unknown = api.post(f"/api/worlds/{world_name}/chats/chat_nope/stop")
    assert unknown.status_code == 404
