"""With AGENTWORLD_TEMPORAL set, `send` posts the message and a worker answers it: the
process that sends never runs the chat. A worker stopped by SIGTERM mid-turn exits 0 and
another worker finishes the turn."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from agentworld.storage.sql import SQLStorage
from agentworld.testing.openai_wire import OpenAIWireServer, Reply


def _world(cli: Any, server: OpenAIWireServer, *options: str) -> None:
    cli("world", "create", "w", *options)
    cli(
        "agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1",
    )


@pytest.mark.both_backends
def test_a_send_is_answered_by_a_worker(tcli: Any, workers: Any, server: OpenAIWireServer) -> None:
    _world(tcli, server)
    worker = workers.start()

    sent = tcli("send", "w", "@a1 hello", "--json").json()

    assert [(m["role"], m["content"]) for m in sent["messages"]] == [
        ("user", "@a1 hello"), ("assistant", "a1 heard: @a1 hello"),
    ]
    assert workers.stop(worker) == 0


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_worker_stopped_by_sigterm_mid_turn_hands_the_turn_to_another(
    tcli: Any, workers: Any, db_url: str, script: Any, server: OpenAIWireServer, wait_for: Any
) -> None:
    script.by_agent["a1"] = lambda body: Reply.text(f"answer to: {body['messages'][-1]['content']}", delay=3.0)
    _world(tcli, server)
    first, second = workers.start(), workers.start()
    sending = threading.Thread(target=lambda: sent.append(tcli("send", "w", "@a1 slow", "--json").json()))
    sent: list[Any] = []
    sending.start()
    wait_for(lambda: any(r["messages"][-1].get("content") == "@a1 slow" for r in server.requests), "the model call")
    holder = _lease_holder_pid(tcli, db_url)
    running, other = (first, second) if holder == first.pid else (second, first)

    stopped_at = time.monotonic()
    assert workers.stop(running) == 0
    assert time.monotonic() - stopped_at < 10
    sending.join(90)

    assert [(m["role"], m["content"]) for m in sent[0]["messages"]] == [
        ("user", "@a1 slow"), ("assistant", "answer to: @a1 slow"),
    ]
    said = [m["content"] for m in tcli("messages", "w", "--json").json()["messages"]]
    assert said.count("answer to: @a1 slow") == 1
    assert other.poll() is None


def _lease_holder_pid(tcli: Any, db_url: str) -> int:
    """The pid of the process that holds the lease of the world's one chat."""
    (chat,) = tcli("chat", "list", "w", "--json").json()["chats"]

    async def read() -> str | None:
        async with SQLStorage(db_url) as storage:
            return await storage.leases.holder("w", chat["chatId"])

    holder = asyncio.run(read())
    assert holder is not None
    return int(holder.split(":")[1])
