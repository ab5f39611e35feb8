"""Multi-agent conversation through the CLI (issue acceptance): routing, turn limits that
survive restarts, and a process killed mid-turn."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply

pytestmark = pytest.mark.both_engines  # in process and on Temporal (tests/conftest.py)

HAND_OFF = "@human Turn limit reached ({n} LLM calls). Please take control of the conversation."


def _two_agents(cli: Any, server: OpenAIWireServer, *world_options: str) -> None:
    cli("world", "create", "w1", *world_options)
    for name in ("a1", "a2"):
        cli(
            "agent", "create", "w1", name, "--provider", "openai", "--model", "m",
            "--base-url", server.base_url, "--system-prompt", f"agent:{name}",
        )


def _turns(server: OpenAIWireServer) -> list[str]:
    return [r["messages"][0]["content"] for r in server.requests if r["messages"][0]["content"].startswith("agent:")]


def test_mentions_route_messages_between_cli_invocations(cli: Any, server: OpenAIWireServer) -> None:
    _two_agents(cli, server)
    cases = [
        ("@a2 only you", ["a2"]),
        ("hello everyone", ["a1", "a2"]),
        ("I think @a1 is right", []),
        ("Hi all\n  @a1 please answer", ["a1"]),
    ]
    for text, expected in cases:
        server.clear()
        sent = cli("send", "w1", text, "--json").json()
        assert [m["sender"] for m in sent["messages"] if m["role"] == "assistant"] == expected
        assert _turns(server) == [f"agent:{a}" for a in expected]
    transcript = cli("messages", "w1", "--json").json()["messages"]
    assert "I think @a1 is right" in [m["content"] for m in transcript]


def test_agents_ping_pong_stops_at_the_turn_limit_and_the_count_survives_restarts(
    cli: Any, server: OpenAIWireServer, script: Any
) -> None:
    _two_agents(cli, server, "--turn-limit", "2")
    script.by_agent["a1"] = lambda body: Reply.text("@a2 your turn")
    script.by_agent["a2"] = lambda body: Reply.text("no, yours")

    sent = cli("send", "w1", "@a1 begin", "--json").json()

    spoken = [(m["sender"], m["content"]) for m in sent["messages"] if m["role"] == "assistant"]
    assert spoken == [
        ("a1", "@a2 your turn"),
        ("a2", "@a1 no, yours"),
        ("a1", "@a2 your turn"),
        ("a2", "@a1 no, yours"),
        ("a1", HAND_OFF.format(n=2)),
    ]
    # The counts are stored: a later process still knows a2 has used its budget; and the
    # hand-back ended the agents' conversation, so a message that is not a person's reaches
    # nobody...
    server.clear()
    assert cli("agent", "show", "w1", "a2", "--json").json()["llmCallCount"] == 2
    again = cli("send", "w1", "@a2 one more", "--sender", "bob", "--json").json()
    assert [m["content"] for m in again["messages"] if m["role"] == "assistant"] == []
    assert _turns(server) == []
    # ...until a human speaks, which resets them.
    cli("send", "w1", "@a2 one more", "--json")
    assert _turns(server) == ["agent:a2"]


@pytest.mark.in_process_only(
    reason="on Temporal a worker runs the turn, so a killed send takes nothing with it (README, Running on Temporal)"
)
def test_a_killed_send_loses_nothing_and_the_world_continues(
    cli: Any, db_url: str, tmp_path: Any, script: Any, server: OpenAIWireServer
) -> None:
    _two_agents(cli, server)
    release = threading.Event()

    def stall(body: dict[str, Any]) -> Reply:
        release.wait(30)
        return Reply.text("too late")

    script.by_agent["a1"] = stall
    env = {**os.environ, "HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", db_url, "send", "w1", "@a1 slow question"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not _turns(server) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _turns(server) == ["agent:a1"]  # the model call is in flight
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()

    transcript = cli("messages", "w1", "--json").json()["messages"]
    assert [m["content"] for m in transcript] == ["@a1 slow question"]
    memory = cli("messages", "w1", "--agent", "a1", "--json").json()["messages"]
    assert [m["content"] for m in memory] == ["@a1 slow question"]
    assert cli("agent", "show", "w1", "a1", "--json").json()["llmCallCount"] == 0

    # The next process finishes what the killed one left (the question is answered, once),
    # then answers its own message.
    script.by_agent["a1"] = lambda body: Reply.text(f"answering {len(body['messages']) - 1} messages")
    sent = cli("send", "w1", "@a1 are you back?", "--json").json()
    assert [m["content"] for m in sent["messages"] if m["role"] == "assistant"] == [
        "answering 1 messages",
        "answering 3 messages",
    ]
    # The human's new message reset the count (R4) before a1 answered it: one call since.
    assert cli("agent", "show", "w1", "a1", "--json").json()["llmCallCount"] == 1
