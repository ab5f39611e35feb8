"""``agentworld send`` exits by what happened to its own message.

A process that runs a world first takes up the work stopped processes left in it — here a
chat whose model never answers. A ``send`` to another chat of the world still gets its answer
and exits 0 at once; the hung chat's work is released when the command exits, kept for the
next process. Real processes, a real SQLite file, a real loopback model server.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import Reply

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)


async def test_send_to_a_healthy_chat_exits_0_while_another_chats_model_never_answers(
    aw: AgentWorld, make_world: Any, script: Any, cli: Any
) -> None:
    await make_world("stuck", "a1")
    script.by_agent["stuck"] = lambda body: Reply.text("never", delay=600)
    hung, healthy = (await aw.new_chat("w")).chat_id, (await aw.new_chat("w")).chat_id
    gave_up = cli("send", "w", "@stuck are you there?", "--chat", hung, "--timeout", "1", check=False)
    assert gave_up.code == 1 and "stopped waiting" in gave_up.stderr  # its work stays queued

    began = time.monotonic()
    sent = cli("send", "w", "@a1 hello", "--chat", healthy, "--json", timeout=30)

    assert time.monotonic() - began < 20
    assert [m["content"] for m in sent.json()["messages"]] == ["@a1 hello", "a1 heard: @a1 hello"]
    assert [i.work.kind for i in await aw.storage.inbox.items("w", hung)] == ["loop"]  # kept
