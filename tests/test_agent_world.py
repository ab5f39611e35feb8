"""What the interfaces ask ``AgentWorld`` instead of its storage: an agent's usage, one waiting
call, what each chat is doing (the CLI and the server never reach past the facade)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.errors import NotFoundError
from agentworld.models import Usage
from agentworld.models.events import CrudEvent, MessageEvent
from agentworld.models.pending import PendingApproval
from agentworld.testing.openai_wire import Reply, ToolCallSpec

pytestmark = pytest.mark.both_backends  # on SQLite and on PostgreSQL (tests/conftest.py)


async def test_agent_usage_counts_the_agents_tokens_and_is_zero_before_it_answers(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1", "a2")
    script.by_agent["a1"] = lambda body: Reply.text("hi", prompt_tokens=7, completion_tokens=3)

    await aw.send("w", "@a1 hello")

    assert await aw.agent_usage("w", "A1") == Usage(input_tokens=7, output_tokens=3)
    assert await aw.agent_usage("w", "a2") == Usage()
    with pytest.raises(NotFoundError):
        await aw.agent_usage("w", "nobody")


async def test_pending_call_and_chat_activity_follow_an_approval_from_asked_to_answered(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path
) -> None:
    await make_world("a1", working_dir=str(tmp_path))
    touch = ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": "touch X"}), id="call_x")
    script.by_agent["a1"] = lambda body: (
        Reply.text("done") if body["messages"][-1]["role"] == "tool" else Reply.tools(touch)
    )
    result = await aw.send("w", "@a1 make X")
    (request,) = result.pending_approvals

    asked = await aw.pending_call("w", request.tool_call_id)
    assert isinstance(asked, PendingApproval) and asked.status == "pending"
    (chat,) = await aw.chat_activity("w")
    assert (chat.chat_id, chat.state, chat.pending_approvals, chat.queued_items, chat.runner) == (
        result.chat_id, "waiting", 1, 0, None,
    )  # fmt: skip

    await aw.approve("w", request.tool_call_id, decision="deny")

    answered = await aw.pending_call("w", request.tool_call_id)
    assert answered is not None and answered.status == "answered"
    (chat,) = await aw.chat_activity("w")
    assert (chat.state, chat.pending_approvals) == ("idle", 0)
    assert await aw.pending_call("w", "call_unknown") is None
    with pytest.raises(NotFoundError):
        await aw.pending_call("nowhere", request.tool_call_id)


async def test_logged_since_gives_messages_and_crud_events_of_every_process_in_order_once(
    aw: AgentWorld, make_world: Any, db_url: str
) -> None:
    await make_world("a1")
    chat = await aw.current_chat("w")
    nothing, start = await aw.logged_since("w", None)

    await aw.send("w", "@a1 hello", chat_id=chat)
    async with AgentWorld(db_url) as other:  # another process renames the chat
        await other.rename_chat("w", chat, "Renamed elsewhere")
    logged, position = await aw.logged_since("w", start)

    assert nothing == [] and position > start
    assert [(e.kind, getattr(e, "operation", None)) for e in logged] == [
        ("message", None), ("message", None), ("crud", "update"),
    ]  # fmt: skip
    assert [e.message.content for e in logged if isinstance(e, MessageEvent)] == ["@a1 hello", "a1 heard: @a1 hello"]
    (renamed,) = [e for e in logged if isinstance(e, CrudEvent)]
    assert (renamed.operation, renamed.chat_id) == ("update", chat)
    assert await aw.logged_since("w", position) == ([], position)  # read once
