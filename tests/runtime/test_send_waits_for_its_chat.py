"""A command waits for its own chat: another chat of the world that hangs cannot hold it up.

``send`` (and ``approve``, ``respond``) ends when its chat is idle and reports what happened
there — its messages, its errors — however long the other chats this process runs take.
Real SQLite files, a real loopback model server whose model never answers one agent.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import Reply


async def test_a_send_to_a_healthy_chat_ends_while_another_chat_hangs(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("stuck", "a1")
    script.by_agent["stuck"] = lambda body: Reply.text("never", delay=600)
    hung, healthy = (await aw.new_chat("w")).chat_id, (await aw.new_chat("w")).chat_id
    await aw.post("w", "@stuck are you there?", chat_id=hung)  # runs in this process, forever

    began = time.monotonic()
    result = await asyncio.wait_for(aw.send("w", "@a1 hello", chat_id=healthy), timeout=20)

    assert time.monotonic() - began < 10
    assert [m.content for m in result.messages] == ["@a1 hello", "a1 heard: @a1 hello"]
    assert not result.timed_out and result.errors == []
    assert not (await aw.runtime("w")).is_idle(hung)  # still waiting for its model
