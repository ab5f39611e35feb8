"""A posted message is stored with a route item; the route step decides who answers.

Real SQLite files, real loopback model servers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer, Reply


async def test_every_turn_of_a_chat_shows_the_model_the_conversation_once_in_order(tmp_path: Path) -> None:
    """Turns posted by two processes in turn: each request is the one before, plus its answer
    and the new question — whichever process's cache the post read from."""

    def answer(body: dict[str, Any]) -> Reply:
        return Reply.text(f"re: {body['messages'][-1]['content']}")

    db = f"sqlite:///{tmp_path / 'aw.db'}"
    with OpenAIWireServer(responder=answer) as server:
        async with AgentWorld(db) as one, AgentWorld(db) as two:
            await one.create_world("w", streaming=False)
            await one.create_agent("w", "a1", provider="openai", model="m", base_url=server.base_url,
                                   system_prompt="agent:a1")  # fmt: skip
            chat = (await one.new_chat("w")).chat_id
            for index, poster in enumerate([one, one, two, one, two, two]):
                result = await poster.send("w", f"@a1 q{index}", chat_id=chat, timeout=30)
                assert [m.content for m in result.messages] == [f"@a1 q{index}", f"re: @a1 q{index}"]
        asked = [r["messages"] for r in server.requests if r["messages"][0]["content"] == "agent:a1"]
    assert len(asked) == 6
    for earlier, later in zip(asked, asked[1:], strict=False):
        assert later[: len(earlier)] == earlier
        assert [m["role"] for m in later[len(earlier) :]] == ["assistant", "user"]
    assert [m["content"] for m in asked[-1] if m["role"] == "user"] == [f"@a1 q{i}" for i in range(6)]


async def test_hooks_named_in_settings_see_the_first_message_a_new_process_posts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = "async def shout(event, respond):\n    if getattr(event, 'message', None) and event.message.sender == 'human':"
    (tmp_path / "shouting.py").write_text(hook + " await respond('HOOKED: ' + event.message.content, sender='hookbot')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    db = f"sqlite:///{tmp_path / 'aw.db'}"
    with OpenAIWireServer() as server:
        async with AgentWorld(db) as setup:
            await setup.create_world("w", streaming=False, hooks=["shouting:shout"])
            await setup.create_agent("w", "a1", provider="openai", model="m", base_url=server.base_url)
        async with AgentWorld(db) as fresh:  # knows nothing of the world's hooks yet
            result = await fresh.send("w", "@a1 hi", timeout=30)
        assert result.messages[-1].content == "HOOKED: @a1 hi"
        assert [r for r in server.requests if "title" not in str(r["messages"][0]).lower()] == []
