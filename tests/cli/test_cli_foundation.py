"""The CLI contract of SPEC §3, through real subprocesses, a real SQLite file and a loopback
OpenAI-compatible server."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)

MESSAGE_KEYS = {
    "messageId",
    "chatId",
    "role",
    "sender",
    "agentId",
    "content",
    "tool_calls",
    "tool_call_id",
    "replyToMessageId",
    "createdAt",
}


def _setup(cli: Any, server: OpenAIWireServer, *extra: str) -> None:
    cli("world", "create", "w1")
    cli(
        "agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "You are a1.", *extra,
    )


def _chat_requests(server: OpenAIWireServer) -> list[dict[str, Any]]:
    """Agent turns only: title generation requests are told apart by their instruction."""
    return [
        r for r in server.requests
        if not (r["messages"][0]["role"] == "system" and r["messages"][0]["content"].startswith("You name"))
    ]


def test_send_prints_the_answer_and_messages_shows_the_transcript(cli: Any, openai_server: OpenAIWireServer) -> None:
    _setup(cli, openai_server)
    openai_server.enqueue(Reply.text("hello human"))

    sent = cli("send", "w1", "@a1 hello", "--json").json()

    assert set(sent) == {"chatId", "messages", "pendingApprovals", "pendingQuestions"}
    assert [m["content"] for m in sent["messages"]] == ["@a1 hello", "hello human"]
    assert all(set(m) == MESSAGE_KEYS for m in sent["messages"])
    human, answer = sent["messages"]
    assert (human["role"], human["sender"]) == ("user", "human")
    assert (answer["role"], answer["sender"], answer["agentId"]) == ("assistant", "a1", "a1")
    assert answer["replyToMessageId"] == human["messageId"]

    listed = cli("messages", "w1", "--json").json()
    assert [m["content"] for m in listed["messages"]] == ["@a1 hello", "hello human"]
    assert {m["chatId"] for m in listed["messages"]} == {sent["chatId"]}


def test_model_gets_system_prompt_first_and_history_on_the_second_send(
    cli: Any, openai_server: OpenAIWireServer
) -> None:
    _setup(cli, openai_server)
    openai_server.enqueue(Reply.text("first answer"), Reply.text("title words"), Reply.text("second answer"))

    first = cli("send", "w1", "@a1 first question", "--json").json()
    cli("send", "w1", "@a1 second question", "--chat", first["chatId"], "--json")

    turns = _chat_requests(openai_server)
    assert len(turns) == 2
    assert turns[0]["messages"] == [
        {"role": "system", "content": "You are a1."},
        {"role": "user", "content": "@a1 first question"},
    ]
    assert turns[1]["messages"] == [
        {"role": "system", "content": "You are a1."},
        {"role": "user", "content": "@a1 first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "@a1 second question"},
    ]


def test_streaming_and_non_streaming_store_the_same_answer_and_usage(
    cli: Any, openai_server: OpenAIWireServer
) -> None:
    _setup(cli, openai_server)
    reply = Reply.text("the same answer, streamed or not", prompt_tokens=11, completion_tokens=7)
    openai_server.enqueue(reply)
    streamed = cli("send", "w1", "@a1 q", "--json").json()
    assert openai_server.requests[0].get("stream") is True

    cli("world", "update", "w1", "--no-streaming")
    openai_server.clear()
    openai_server.enqueue(reply)
    chat = cli("chat", "new", "w1", "--json").json()["chatId"]
    plain = cli("send", "w1", "@a1 q", "--chat", chat, "--json").json()
    assert not openai_server.requests[0].get("stream")

    assert streamed["messages"][-1]["content"] == plain["messages"][-1]["content"]
    agent = cli("agent", "show", "w1", "a1", "--json").json()
    # Two calls to a model the price table does not know: their cost is unknown, not 0.
    assert agent["usage"] == {"inputTokens": 22, "outputTokens": 14, "costUsd": None, "unpricedCalls": 2}
    assert agent["llmCallCount"] == 1  # the second human message reset the count, then one call
    chats = cli("chat", "list", "w1", "--json").json()["chats"]
    assert {c["chatId"]: c["usage"] for c in chats}[chat] == {
        "inputTokens": 11, "outputTokens": 7, "costUsd": None, "unpricedCalls": 1,
    }  # fmt: skip


def test_chat_new_and_list(cli: Any, openai_server: OpenAIWireServer) -> None:
    _setup(cli, openai_server)
    chat = cli("chat", "new", "w1", "--json").json()
    assert set(chat) == {"chatId"}
    plain_id = cli("chat", "new", "w1").stdout.strip()
    chats = cli("chat", "list", "w1", "--json").json()["chats"]
    assert [c["chatId"] for c in chats] == [chat["chatId"], plain_id]
    assert {"chatId", "name", "messageCount", "createdAt"} <= set(chats[0])
    assert cli("world", "show", "w1", "--json").json()["currentChatId"] == plain_id


def test_world_and_agent_crud(cli: Any, tmp_path: Any) -> None:
    created = cli("world", "create", "w1", "--turn-limit", "7", "--description", "d", "--json").json()
    assert (created["name"], created["turnLimit"], created["description"]) == ("w1", 7, "d")
    cli("world", "create", "w2")
    assert [w["name"] for w in cli("world", "list", "--json").json()["worlds"]] == ["w1", "w2"]
    updated = cli("world", "update", "w1", "--turn-limit", "3", "--working-dir", str(tmp_path), "--json").json()
    assert (updated["turnLimit"], updated["description"], updated["workingDir"]) == (3, "d", str(tmp_path))

    cli("agent", "create", "w1", "a1", "--provider", "scripted", "--model", "echo", "--temperature", "0.5")
    shown = cli("agent", "update", "w1", "a1", "--system-prompt", "be brief", "--json").json()
    assert (shown["systemPrompt"], shown["temperature"], shown["provider"]) == ("be brief", 0.5, "scripted")
    assert [a["name"] for a in cli("agent", "list", "w1", "--json").json()["agents"]] == ["a1"]
    cli("agent", "delete", "w1", "a1")
    assert cli("agent", "list", "w1", "--json").json() == {"agents": []}
    cli("world", "delete", "w2")
    assert [w["name"] for w in cli("world", "list", "--json").json()["worlds"]] == ["w1"]


def _fails(result: Any, *needles: str) -> None:
    assert result.code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def test_bad_input_is_one_line_and_non_zero(cli: Any, tmp_path: Any) -> None:
    cli("world", "create", "w1")
    cli("agent", "create", "w1", "a1", "--provider", "scripted", "--model", "echo")
    _fails(cli("world", "create", "w1", check=False), "already exists")
    _fails(cli("world", "show", "nope", check=False), "nope", "not found")
    _fails(cli("agent", "create", "w1", "A1", "--provider", "scripted", "--model", "m", check=False), "already exists")
    _fails(cli("agent", "create", "w1", "a2", "--provider", "nosuch", "--model", "m", check=False), "unknown provider")
    _fails(cli("agent", "show", "w1", "ghost", check=False), "ghost")
    _fails(cli("agent", "create", "nowhere", "a9", "--provider", "scripted", "--model", "m", check=False), "nowhere")
    _fails(cli("world", "create", "w3", "--turn-limit", "0", check=False), "--turn-limit must be ≥ 1")
    _fails(cli("world", "create", "bad name", check=False), "invalid name")
    _fails(cli("world", "update", "w1", "--working-dir", str(tmp_path / "missing"), check=False), "does not exist")
    _fails(cli("send", "w1", "hi", "--chat", "chat_unknown", check=False), "chat_unknown")
    _fails(cli("messages", "nowhere", check=False), "nowhere")
    # Nothing half-written: the failed commands left the world as it was.
    assert [a["name"] for a in cli("agent", "list", "w1", "--json").json()["agents"]] == ["a1"]
    assert [w["name"] for w in cli("world", "list", "--json").json()["worlds"]] == ["w1"]


def test_unreadable_database_is_a_one_line_error(cli: Any, tmp_path: Any) -> None:
    not_a_db = tmp_path / "garbage.db"
    not_a_db.write_bytes(b"this is not a database" * 100)
    _fails(cli("world", "list", db=f"sqlite:///{not_a_db}", check=False), "database")
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    _fails(cli("world", "list", db=f"sqlite:///{blocked}/x.db", check=False), "database")


def test_unreachable_provider_names_the_url_and_keeps_the_human_message(cli: Any) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    cli("world", "create", "w1")
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m", "--base-url", url)

    result = cli("send", "w1", "@a1 are you there?", check=False)

    _fails(result, "127.0.0.1:" + str(port))
    stored = cli("messages", "w1", "--json").json()["messages"]
    assert stored[0]["content"] == "@a1 are you there?"
    assert stored[-1]["role"] == "system" and str(port) in stored[-1]["content"]


def test_provider_error_body_is_shown_not_a_traceback(cli: Any, openai_server: OpenAIWireServer) -> None:
    _setup(cli, openai_server)
    openai_server.enqueue(Reply.error(400, "model 'm' does not support tools"))
    result = cli("send", "w1", "@a1 hi", check=False)
    _fails(result, "400", "does not support tools")


def test_missing_api_key_names_the_env_var(cli: Any) -> None:
    cli("world", "create", "w1")
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "gpt-x")
    _fails(cli("send", "w1", "@a1 hi", check=False), "OPENAI_API_KEY")
    assert cli("messages", "w1", "--json").json()["messages"][0]["content"] == "@a1 hi"


def test_demo_runs_offline(cli: Any) -> None:
    result = cli("demo")
    assert "planner" in result.stdout and "critic" in result.stdout
    assert "rollback" in result.stdout
    assert "approval requested" in result.stdout and "file RELEASED created: yes" in result.stdout
