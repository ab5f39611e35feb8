"""Text that one backend could store and the other not (on SQLite and on PostgreSQL).

PostgreSQL's text type refuses a NUL character, SQLite keeps it: a person's message holding one
is refused by every interface before anything is stored; a tool's output keeps its NUL escaped
inside its JSON result, and a NUL in a model's answer is stored as U+FFFD, so the turn completes
on both backends alike. ``send`` refuses what
``post`` refuses: an empty message, and a sender posing as one of the world's agents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld import AgentWorld
from agentworld.errors import InvalidInputError
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec


@pytest.mark.parametrize(
    ("text", "sender", "refusal"),
    [
        ("@a1 hi\x00there", "human", "text: holds a NUL character"),
        ("  \n ", "human", "text: the message is empty"),
        ("@a1 hi", "A1", "sender 'A1': it names an agent of this world"),
    ],
)
async def test_a_message_no_interface_may_publish_is_refused_by_send_and_post_alike(
    aw: AgentWorld, tmp_path: Path, text: str, sender: str, refusal: str
) -> None:
    await aw.create_world("w", working_dir=str(tmp_path))
    await aw.create_agent("w", "a1", provider="scripted", model="echo")
    chat = (await aw.new_chat("w")).chat_id

    with pytest.raises(InvalidInputError) as sent:
        await aw.send("w", text, chat_id=chat, sender=sender, timeout=30)
    with pytest.raises(InvalidInputError) as posted:
        await aw.post("w", text, chat_id=chat, sender=sender)

    assert str(sent.value).startswith(refusal) and str(posted.value) == str(sent.value)
    assert await aw.transcript("w", chat) == []
    answered = await aw.send("w", "@a1 still here", chat_id=chat, timeout=30)
    assert [m.content for m in answered.messages] == ["@a1 still here", "echo: @a1 still here"]


async def test_a_nul_from_a_tool_is_kept_escaped_and_one_from_a_model_is_stored_as_u_fffd(
    aw: AgentWorld, tmp_path: Path
) -> None:
    """A shell command printing binary output, then a model answer holding a NUL: the turn
    completes; the tool's output is exact once its JSON is read, and the transcript and the
    agent's memory hold U+FFFD where the model's NUL was."""
    replies = iter(
        [
            Reply.tools(ToolCallSpec("shell_cmd", json.dumps({"command": "printf 'a\\000b'"}))),
            Reply.text("seen: x\x00y"),
        ]
    )

    def respond(body: dict[str, Any]) -> Reply:
        if body["messages"][0]["content"] != "agent:a1":
            return Reply.text("A title")
        return next(replies)

    with OpenAIWireServer(responder=respond) as server:
        await aw.create_world("w", working_dir=str(tmp_path), streaming=False, policy_mode="yolo")
        await aw.create_agent(
            "w", "a1", provider="openai", model="m", base_url=server.base_url, system_prompt="agent:a1"
        )
        chat = (await aw.new_chat("w")).chat_id
        result = await aw.send("w", "@a1 run it", chat_id=chat, timeout=60)

    assert result.errors == [] and result.pending_approvals == []
    stored = await aw.transcript("w", chat)
    tool_output = [m.content or "" for m in stored if m.role == "tool"]
    assert len(tool_output) == 1 and json.loads(tool_output[0])["stdout"] == "a\x00b"
    assert stored[-1].content == "seen: x\ufffdy"
    assert all("\x00" not in (m.content or "") for m in stored)
    remembered = await aw.storage.memory("w", "a1", chat)
    assert remembered[-1].content == "seen: x\ufffdy"
