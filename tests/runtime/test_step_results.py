"""A step of a chat's work is a value (``StepResult``) that one place commits whole.

An approval request — the injected ``client.requestApproval`` message in the agent's memory
and the transcript, its pending row, its audit entry and its ``approval`` event — is one step:
stored together or not at all, and its event logged once. Real SQLite files, a real loopback
model server.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.errors import AgentWorldError
from agentworld.models import Chat, Message, ToolCall, World
from agentworld.models.pending import PendingApproval
from agentworld.models.records import AuditEntry
from agentworld.models.work import WAIT, InboxChange, Loop, StepResult
from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage
from agentworld.testing.openai_wire import Reply, ToolCallSpec


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(db_url) as store:
        await store.create_world(World(name="w"))
        await store.create_chat(Chat(world="w", chat_id="c1"))
        yield store


def request_step(approval_id: str) -> StepResult:
    request = Message(
        chat_id="c1",
        role="assistant",
        sender="a1",
        agent_id="a1",
        tool_calls=[ToolCall.of(approval_id, "client.requestApproval", "{}")],
    )
    waiting = PendingApproval(
        world="w", tool_call_id=approval_id, chat_id="c1", agent="a1", tool_name="shell_cmd",
        arguments="{}", batch_id="msg_batch", trigger_sender="human", reply_to=None,
        original_call_id="call_1", request_message_id=request.message_id, message="run it?",
        tool_args={},
    )  # fmt: skip
    audit = AuditEntry(event="request", actor="a1", approval_id=approval_id, agent="a1", chat_id="c1",
                       tool_name="shell_cmd", tool_args={})  # fmt: skip
    return StepResult("c1", said=(request,), memory=(("a1", request),), waiting=waiting, audit=audit, next=WAIT)


async def test_an_approval_request_is_stored_whole_or_not_at_all(storage: SQLStorage) -> None:
    await storage.commit_step("w", request_step("ap_1"))

    assert [m.tool_calls[0].id for m in await storage.transcript("w", "c1") if m.tool_calls] == ["ap_1"]
    assert len(await storage.memory("w", "a1", "c1")) == 1
    assert [p.tool_call_id for p in await storage.pending.find("w", kind="approval")] == ["ap_1"]
    assert [e.approval_id for e in await storage.approvals.audit_log("w")] == ["ap_1"]

    # A second request whose pending row cannot be written (its id is taken) leaves nothing.
    again = request_step("ap_1")
    with pytest.raises(AgentWorldError):
        await storage.commit_step("w", again)
    assert len(await storage.transcript("w", "c1")) == 1
    assert len(await storage.memory("w", "a1", "c1")) == 1
    assert len(await storage.approvals.audit_log("w")) == 1


async def test_a_step_that_finishes_its_item_replaces_it_in_place(storage: SQLStorage) -> None:
    said = Message(chat_id="c1", role="assistant", sender="a1", agent_id="a1", content="done")
    await storage.inbox.change("w", InboxChange("c1", append=(Loop(agent="a1", answer_to="human", reply_to=None),)))
    (item,) = await storage.inbox.items("w", "c1")
    follow = Loop(agent="a2", answer_to="a1", reply_to=said.message_id)

    await storage.commit_step("w", StepResult.spoken(said, by="a1", llm_calls=1, finishes=item.item_id, then=(follow,)))

    assert [i.work for i in await storage.inbox.items("w", "c1")] == [follow]
    assert [m.content for m in await storage.memory("w", "a1", "c1")] == ["done"]
    assert [m.content for m in await storage.transcript("w", "c1")] == ["done"]


async def test_a_request_made_in_a_turn_logs_its_event_once_with_its_message(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path
) -> None:
    await make_world("a1", working_dir=str(tmp_path))
    asked = ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": "touch X"}), id="call_x")
    script.by_agent["a1"] = lambda body: Reply.tools(asked)

    result = await aw.send("w", "@a1 make X", timeout=30)

    (pending,) = result.pending_approvals
    approvals = await aw.storage.list_events("w", kind="approval")
    assert [(e["phase"], e["approvalId"]) for e in approvals] == [("requested", pending.tool_call_id)]
    request = (await aw.storage.transcript("w", result.chat_id))[-1]
    assert request.tool_calls and request.tool_calls[0].id == pending.tool_call_id
    # The event comes after the request it announces: a reader of the log has the message then.
    logged = [(e.kind, e.document) for e in (await EventLog(aw.storage).after("w", 0)).events]
    kinds = [kind for kind, _document in logged]
    asked_at = next(i for i, (kind, doc) in enumerate(logged) if kind == "message" and "requestApproval" in str(doc))
    assert kinds.index("approval") == asked_at + 1
    assert [e.event for e in await aw.storage.approvals.audit_log("w")] == ["request"]
