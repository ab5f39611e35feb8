"""Many ``AgentWorld.send`` calls at once in one process, each in its own chat.

Each call reports its own chat: its answer, and only its own chat's errors (a send watches
its chat on the bus, not the world). Every send also waits, as a short-lived process does,
until this process runs no chat; a waiter that gives up meanwhile stops only its wait.
Loopback OpenAI wire server, a real SQLite file.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import Reply

CHATS = 40


async def test_concurrent_sends_each_report_their_own_chat(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1", "a2")
    script.by_agent["a1"] = lambda body: Reply.text(f"re: {body['messages'][-1]['content']}")
    script.by_agent["a2"] = lambda body: Reply.error(500, "the model fell over")
    chats = [(await aw.new_chat("w")).chat_id for _ in range(CHATS)]
    texts = [f"@a1 question {i}" if i % 2 == 0 else f"@a2 question {i}" for i in range(CHATS)]
    runtime = await aw.runtime("w")

    sends = [
        asyncio.create_task(aw.send("w", text, chat_id=chat, timeout=60))
        for chat, text in zip(chats, texts, strict=True)
    ]
    for _ in range(1000):  # until the first chat runs
        if not runtime.is_idle():
            break
        await asyncio.sleep(0.001)
    with pytest.raises(TimeoutError):  # a waiter that gives up at once ...
        await runtime.wait_until_idle(timeout=0.001)
    results = await asyncio.gather(*sends)  # ... cancelled none of the work

    for i, (chat, text, result) in enumerate(zip(chats, texts, results, strict=True)):
        assert result.chat_id == chat and not result.timed_out
        assert {m.chat_id for m in result.messages} == {chat}
        if i % 2 == 0:
            assert [m.content for m in result.messages] == [text, f"re: {text}"]
            assert result.errors == []
        else:
            assert result.messages[0].content == text
            assert all(m.role != "assistant" for m in result.messages)
            assert len(result.errors) == 1 and "fell over" in result.errors[0]
    assert runtime.is_idle()
