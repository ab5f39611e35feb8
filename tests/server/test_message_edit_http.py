"""Editing and deleting messages over HTTP (SPEC K2), on each backend's server: a PATCH replaces
a person's message (202 with the new id; the agents answer in the background), and the stream
says so — the ``crud`` delete naming every removed message, then the new message; an approval
pending after it is gone (404). A DELETE removes a message onward (204); a client resuming the
stream from before never gets a removed message. 404 for an unknown message or one of another
chat, 422 for an edit of an agent's message, 409 while another process runs the chat."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from http_harness import LLMScript, Served, SSEClient, is_message, make_world, refusal

from agentworld.storage.sql import SQLStorage
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)

SHELL = ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": "rm -rf build"}))


def _messages(api: httpx.Client, world: str, chat: str) -> list[dict[str, object]]:
    return list(api.get(f"/api/worlds/{world}/chats/{chat}/messages").json()["messages"])


def test_an_edit_answers_the_new_text_and_the_stream_says_what_was_removed(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "a1")
    script.by_agent[f"{world_name}/a1"] = lambda body: (
        Reply.tools(SHELL) if "clean" in str(body["messages"][-1].get("content"))
        else Reply.text(f"a1 heard: {body['messages'][-1].get('content')}")
    )
    base = f"/api/worlds/{world_name}"
    with SSEClient(f"{served.base_url}{base}/events?chat={chat}") as stream:
        posted = api.post(f"{base}/chats/{chat}/messages", json={"text": "@a1 clean the build"})
        asked = stream.wait_for(lambda f: f.event == "approval")
        approval_id = asked.data["approvalId"]
        old = posted.json()["messageId"]

        edited = api.patch(f"{base}/chats/{chat}/messages/{old}", json={"text": "@a1 list it"})

        assert edited.status_code == 202, edited.text
        assert set(edited.json()) == {"chatId", "messageId"} and edited.json()["chatId"] == chat
        new = edited.json()["messageId"]
        assert new != old
        crud = stream.wait_for(lambda f: f.event == "crud" and f.data["entity"] == "message")
        assert crud.data["operation"] == "delete" and crud.data["chatId"] == chat
        assert crud.data["name"] == old and crud.data["data"]["edited"] is True
        assert crud.data["data"]["messageIds"][0] == old and len(crud.data["data"]["messageIds"]) == 3
        posted_again = stream.wait_for(lambda f: f.event == "message")
        assert posted_again.data["message"]["messageId"] == new and posted_again.id > crud.id
        stream.wait_for(is_message("a1", "a1 heard: @a1 list it"))
    assert [(m["sender"], m["content"]) for m in _messages(api, world_name, chat)] == [
        ("human", "@a1 list it"), ("a1", "a1 heard: @a1 list it")
    ]
    answer = api.post(f"{base}/approvals/{approval_id}", json={"decision": "approve"})
    assert refusal(answer)[:2] == (404, "not_found")
    assert api.get(f"{base}/approvals").json()["approvals"] == []
    (entry,) = [e for e in api.get(f"{base}/audit").json()["audit"] if e["event"] == "message_edited"]
    assert entry["detail"]["messageId"] == old and entry["detail"]["waitingCalls"] == [approval_id]


def test_delete_onward_and_a_stream_resumed_from_before_it(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "a1")
    base = f"/api/worlds/{world_name}"
    with SSEClient(f"{served.base_url}{base}/events?chat={chat}") as stream:
        api.post(f"{base}/chats/{chat}/messages", json={"text": "@a1 keep"})
        kept = stream.wait_for(is_message("a1", "keep"))
        api.post(f"{base}/chats/{chat}/messages", json={"text": "@a1 drop"})
        stream.wait_for(is_message("a1", "drop"))
    dropped = [m for m in _messages(api, world_name, chat) if "drop" in str(m["content"])]

    gone = api.delete(f"{base}/chats/{chat}/messages/{dropped[0]['messageId']}")

    assert gone.status_code == 204, gone.text
    assert [m["content"] for m in _messages(api, world_name, chat)] == ["@a1 keep", "a1 heard: @a1 keep"]
    with SSEClient(
        f"{served.base_url}{base}/events?chat={chat}", headers={"Last-Event-ID": str(kept.id)}
    ) as resumed:
        crud = resumed.wait_for(lambda f: f.event == "crud" and f.data["entity"] == "message")
        assert crud.data["data"] == {"messageIds": [m["messageId"] for m in dropped], "edited": False}
        assert not [f for f in resumed.frames if f.event == "message"]  # the removed ones never come


def test_refusals_unknown_not_a_persons_and_another_process_running_the_chat(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "a1")
    other = api.post(f"/api/worlds/{world_name}/chats").json()["chatId"]
    base = f"/api/worlds/{world_name}"
    api.post(f"{base}/chats/{chat}/messages", json={"text": "@a1 hi"})
    deadline = time.monotonic() + 20
    while len(messages := _messages(api, world_name, chat)) < 2:
        assert time.monotonic() < deadline, "the agent never answered"
        time.sleep(0.05)
    human, answer = messages

    assert refusal(api.delete(f"{base}/chats/{chat}/messages/msg_nope"))[:2] == (404, "not_found")
    assert refusal(api.delete(f"{base}/chats/{other}/messages/{human['messageId']}"))[:2] == (404, "not_found")
    status, code, text = refusal(api.patch(f"{base}/chats/{chat}/messages/{answer['messageId']}", json={"text": "x"}))
    assert (status, code) == (422, "invalid_input") and "not a person's" in text

    async def hold(claim: bool) -> None:
        async with SQLStorage(served.db_url) as store:
            if claim:
                assert await store.leases.claim(world_name, chat, "elsewhere.example:1:1", ttl=60)
            else:
                await store.leases.release(world_name, chat, "elsewhere.example:1:1")

    asyncio.run(hold(True))
    try:
        busy = api.delete(f"{base}/chats/{chat}/messages/{human['messageId']}")
        assert refusal(busy)[:2] == (409, "conflict")
        busy = api.patch(f"{base}/chats/{chat}/messages/{human['messageId']}", json={"text": "@a1 again"})
        assert refusal(busy)[:2] == (409, "conflict")
        assert len(_messages(api, world_name, chat)) == 2
    finally:
        asyncio.run(hold(False))
    assert api.delete(f"{base}/chats/{chat}/messages/{human['messageId']}").status_code == 204
    assert _messages(api, world_name, chat) == []
