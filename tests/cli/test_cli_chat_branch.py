"""`agentworld chat branch` (SPEC K1) as a user runs it: real processes, a SQLite file and a
loopback OpenAI server that records what each model call was sent."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)


def a1_requests(server: OpenAIWireServer) -> list[list[dict[str, Any]]]:
    return [b["messages"] for b in server.requests if b["messages"][0].get("content") == "agent:a1"]


def test_a_branch_from_the_third_of_ten_messages_goes_on_from_there(cli: Any, server: OpenAIWireServer) -> None:
    cli("world", "create", "w1")
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    for text in ("one", "two", "three", "four", "five"):
        cli("send", "w1", f"@a1 {text}")
    source = cli("messages", "w1", "--json").json()
    assert len(source["messages"]) == 10
    third = source["messages"][2]
    asked_before = a1_requests(server)

    printed = cli("chat", "branch", "w1", third["messageId"])

    branch = printed.stdout.strip()
    assert branch.startswith("chat_") and branch != source["chatId"]
    shown = cli("messages", "w1", "--json").json()  # the branch is the current chat now
    assert shown["chatId"] == branch
    assert [(m["sender"], m["content"]) for m in shown["messages"]] == [
        (m["sender"], m["content"]) for m in source["messages"][:3]
    ]
    memory = cli("messages", "w1", "--agent", "a1", "--chat", branch, "--json").json()
    assert [(m["role"], m["content"]) for m in memory["messages"]] == [
        ("user", "@a1 one"), ("assistant", source["messages"][1]["content"]), ("user", "@a1 two")
    ]
    listed = {c["chatId"]: c for c in cli("chat", "list", "w1", "--json").json()["chats"]}
    assert listed[branch]["branchOf"] == {"chatId": source["chatId"], "messageId": third["messageId"]}
    assert listed[branch]["name"] == f"{listed[source['chatId']]['name']} (branch)"
    assert listed[source["chatId"]]["branchOf"] is None

    cli("send", "w1", "@a1 more")

    (request,) = a1_requests(server)[len(asked_before):]
    # What the model was sent for the third message, then the new one: exactly that history.
    assert request == [*asked_before[1], {"role": "user", "content": "@a1 more"}]
    assert cli("messages", "w1", "--chat", source["chatId"], "--json").json() == source


def test_an_unknown_message_or_one_of_another_chat_is_refused_in_one_line(cli: Any, server: OpenAIWireServer) -> None:
    cli("world", "create", "w1")
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    sent = cli("send", "w1", "@a1 one", "--json").json()
    other = cli("chat", "new", "w1", "--json").json()["chatId"]
    chats = cli("chat", "list", "w1", "--json").json()

    unknown = cli("chat", "branch", "w1", "msg_nope", "--json", check=False)
    foreign = cli("chat", "branch", "w1", sent["messages"][0]["messageId"], "--chat", other, check=False)

    for refused in (unknown, foreign):
        assert refused.code == 1 and refused.stdout == ""
        assert len(refused.stderr.strip().splitlines()) == 1 and "not found" in refused.stderr
    assert cli("chat", "list", "w1", "--json").json() == chats
    branched = cli("chat", "branch", "w1", sent["messages"][0]["messageId"], "--chat", sent["chatId"], "--json")
    assert branched.json()["chatId"].startswith("chat_")
