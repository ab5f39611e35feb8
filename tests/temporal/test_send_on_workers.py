"""With AGENTWORLD_TEMPORAL set, `send` posts the message and a worker answers it: the
process that sends never runs the chat, and stops without Temporal running anything."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer


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
