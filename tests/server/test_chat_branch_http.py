"""Branching a chat over HTTP (SPEC K1, §3.1): ``POST .../chats/{c}/branch`` makes the branch,
the event stream announces it and carries its messages, the chat documents say where it came
from, and a message the chat does not hold is a 404 -- on SQLite and on PostgreSQL."""

from __future__ import annotations

import httpx
import pytest
from http_harness import LLMScript, Served, SSEClient, is_message, make_world, refusal

from agentworld.testing.openai_wire import OpenAIWireServer

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)


def test_a_branch_is_made_announced_and_shown_like_any_chat(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "a1")
    base = f"/api/worlds/{world_name}"
    with SSEClient(f"{served.base_url}{base}/events") as stream:
        for text in ("@a1 one", "@a1 two"):
            assert api.post(f"{base}/chats/{chat}/messages", json={"text": text}).status_code == 202
            stream.wait_for(is_message("a1", f"a1 heard: {text}"))
        source = api.get(f"{base}/chats/{chat}/messages").json()["messages"]
        chosen = source[1]["messageId"]

        made = api.post(f"{base}/chats/{chat}/branch", json={"messageId": chosen})

        assert made.status_code == 201, made.text
        branch = made.json()["chatId"]
        assert set(made.json()) == {"chatId"}
        announced = stream.wait_for(lambda f: f.event == "crud" and f.data["chatId"] == branch)
        # The copies are stored (and logged) in the transaction that makes the branch, before
        # the event that announces it.
        copied = [f for f in stream.frames if f.event == "message" and f.data["message"]["chatId"] == branch]

    where = {"chatId": chat, "messageId": chosen}
    assert (announced.data["operation"], announced.data["entity"], announced.data["name"]) == ("create", "chat", branch)
    assert announced.data["data"] == {"branchOf": where}
    page = api.get(f"{base}/chats/{branch}/messages").json()
    assert [m["content"] for m in page["messages"]] == [m["content"] for m in source[:2]]
    assert [f.data["message"] for f in copied] == page["messages"]
    listed = {c["chatId"]: c for c in api.get(f"{base}/chats").json()["chats"]}
    assert listed[branch]["branchOf"] == where and listed[chat]["branchOf"] is None
    shown = api.get(f"{base}/chats/{branch}").json()
    assert shown["branchOf"] == where and shown["messageCount"] == 2
    assert shown["name"] == f"{listed[chat]['name']} (branch)"
    assert api.get(f"{base}/chats/{chat}/messages").json()["messages"] == source


def test_a_message_the_chat_does_not_hold_is_not_found(
    api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "a1")
    base = f"/api/worlds/{world_name}"
    posted = api.post(f"{base}/chats/{chat}/messages", json={"text": "hello"}).json()
    other = api.post(f"{base}/chats").json()["chatId"]
    chats = [c["chatId"] for c in api.get(f"{base}/chats").json()["chats"]]

    for path, body in [
        (f"{base}/chats/{chat}/branch", {"messageId": "msg_nope"}),
        (f"{base}/chats/{other}/branch", {"messageId": posted["messageId"]}),
        (f"{base}/chats/chat_nope/branch", {"messageId": posted["messageId"]}),
        (f"/api/worlds/{world_name}-nope/chats/{chat}/branch", {"messageId": posted["messageId"]}),
    ]:
        status, code, _ = refusal(api.post(path, json=body))
        assert (status, code) == (404, "not_found"), path
    status, _, _ = refusal(api.post(f"{base}/chats/{chat}/branch", json={"message": posted["messageId"]}))
    assert status == 422
    assert [c["chatId"] for c in api.get(f"{base}/chats").json()["chats"]] == chats
