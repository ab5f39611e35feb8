"""The event stream of a world (SPEC §3.1) against the real server: every event once, in
order, with its log position as ``id:``; resumable with ``Last-Event-ID``; live token chunks;
events of other processes (a CLI ``send``) included."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import httpx
import pytest
from http_harness import LLMScript, Served, SSEClient, is_message, make_world, server_env

from agentworld.testing.openai_wire import OpenAIWireServer, Reply

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)


def stored_ids(frames: list[Any]) -> list[int]:
    return [f.id for f in frames if f.id is not None]


def test_a_posted_message_is_answered_on_the_stream(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "a1", streaming=True)
    with SSEClient(f"{served.base_url}/api/worlds/{world_name}/events") as stream:
        posted = api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": "hello"})
        assert posted.status_code == 202
        assert posted.json()["chatId"] == chat

        answer = stream.wait_for(is_message("a1", "a1 heard: hello"))

    kinds = [(f.event, f.data.get("phase")) for f in stream.frames]
    assert kinds[0] == ("message", None) and stream.frames[0].data["message"]["messageId"] == posted.json()["messageId"]
    assert ("sse", "start") in kinds and ("sse", "chunk") in kinds and ("sse", "end") in kinds
    assert kinds.index(("sse", "start")) < kinds.index(("sse", "chunk")) < kinds.index(("sse", "end"))
    chunks = [f for f in stream.frames if f.data.get("phase") == "chunk"]
    assert all(f.id is None for f in chunks)  # live only: no position to resume from
    assert "".join(f.data["content"] for f in chunks) == "a1 heard: hello"
    ids = stored_ids(stream.frames)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert answer.data["message"]["chatId"] == chat
    # The transcript says the same, and tells where the stream stands.
    page = api.get(f"/api/worlds/{world_name}/chats/{chat}/messages").json()
    assert [m["content"] for m in page["messages"]] == ["hello", "a1 heard: hello"]
    assert page["lastEventId"] >= answer.id


def test_reconnecting_with_last_event_id_misses_nothing_and_repeats_nothing(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, script: LLMScript, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "a1", "a2")
    # a1 hands over to a2 and back a few times: a conversation that goes on while we are away.
    turns = iter(range(100))
    script.by_agent[f"{world_name}/a1"] = lambda body: Reply.text(f"@a2 turn {next(turns)}")
    script.by_agent[f"{world_name}/a2"] = lambda body: Reply.text(f"@a1 turn {next(turns)}", delay=0.05)
    url = f"{served.base_url}/api/worlds/{world_name}/events"
    start = api.get(f"/api/worlds/{world_name}/chats/{chat}/messages").json()["lastEventId"]

    with SSEClient(f"{url}?after={start}") as first:
        api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": "@a1 go"})
        first.wait_for(is_message("a1", "turn"))
    last_seen = stored_ids(first.frames)[-1]
    # Away while the agents talk on, then back with the last id seen.
    with SSEClient(url, headers={"Last-Event-ID": str(last_seen)}) as second:
        second.wait_for(lambda f: f.event == "message" and "Turn limit reached" in (f.data["message"]["content"] or ""), timeout=30)
    with SSEClient(f"{url}?after={start}") as replay:
        replay.wait_for(lambda f: f.id == stored_ids(second.frames)[-1])

    joined = [f.id for f in first.frames if f.id is not None] + stored_ids(second.frames)
    assert joined == stored_ids(replay.frames)  # nothing missed, nothing twice, same order
    assert stored_ids(second.frames)[0] > last_seen


def test_two_clients_see_the_same_events(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "a1")
    url = f"{served.base_url}/api/worlds/{world_name}/events?chat={chat}"
    with SSEClient(url) as one, SSEClient(url) as two:
        api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": "hi all"})
        one.wait_for(is_message("a1", "hi all"))
        two.wait_for(is_message("a1", "hi all"))
    assert [(f.id, f.event) for f in one.frames if f.id] == [(f.id, f.event) for f in two.frames if f.id]


def test_a_send_from_the_cli_in_another_process_appears_on_the_stream(
    served: Served, api: httpx.Client, llm: OpenAIWireServer, world_name: str
) -> None:
    chat = make_world(api, world_name, llm, "a1")
    with SSEClient(f"{served.base_url}/api/worlds/{world_name}/events") as stream:
        sent = subprocess.run(
            [sys.executable, "-m", "agentworld", "--db", served.db_url, "send", world_name,
             "from the terminal", "--chat", chat],
            env=server_env(served.home), capture_output=True, text=True, timeout=60,
        )
        assert sent.returncode == 0, sent.stderr
        stream.wait_for(is_message("human", "from the terminal"))
        stream.wait_for(is_message("a1", "from the terminal"))


def test_a_bad_last_event_id_and_an_unknown_world_are_refused(served: Served, api: httpx.Client) -> None:
    unknown = api.get("/api/worlds/nowhere/events")
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "not_found"
    api.post("/api/worlds", json={"name": "streamcheck"})
    bad = api.get("/api/worlds/streamcheck/events", headers={"Last-Event-ID": "x1"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_request"
