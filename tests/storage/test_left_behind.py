"""``SQLStorage.left_behind``: the one read a starting runtime makes to learn what stopped
processes left in its world, on both backends. A kind it misses is work never taken up
(a run never reported interrupted, an overdue request never denied, a chat never resumed),
so each kind is shown appearing and going, and another world's leftovers never count."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentworld.models import Chat, Message, World
from agentworld.models.pending import PendingApproval, PendingClientCall
from agentworld.models.work import InboxChange, Route
from agentworld.storage.sql import SQLStorage

CALL = {"chat_id": "c1", "agent": "a1", "batch_id": "msg_1", "trigger_sender": "human"}


@pytest.fixture
async def storage(both_backends_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(both_backends_url) as store:
        for world in ("lab", "other"):
            await store.create_world(World(name=world))
            await store.create_chat(Chat(world=world, chat_id="c1"))
        yield store


async def test_a_world_nobody_left_anything_in(storage: SQLStorage) -> None:
    assert await storage.left_behind("lab") == frozenset()


async def test_a_tool_run_left_running_until_it_is_finished(storage: SQLStorage) -> None:
    seq = await storage.tool_logs.start(
        world="lab", chat_id="c1", agent="a1", tool_call_id="call_1", tool_name="read_file", arguments={}
    )
    assert await storage.left_behind("lab") == {"tool_runs"}
    assert await storage.left_behind("other") == frozenset()

    await storage.tool_logs.finish(seq, status="interrupted", output={}, duration_ms=0.0)
    assert await storage.left_behind("lab") == frozenset()


async def test_an_approval_request_waiting_but_not_a_client_call(storage: SQLStorage) -> None:
    client = PendingClientCall(world="lab", tool_call_id="call_c", tool_name="pick", arguments="{}", **CALL)
    await storage.pending.add([client])
    assert await storage.left_behind("lab") == frozenset()

    request = PendingApproval(
        world="lab",
        tool_call_id="approval_1",
        tool_name="shell_cmd",
        arguments='{"command": "rm x"}',
        original_call_id="call_1",
        request_message_id="msg_2",
        message="run `rm x`?",
        tool_args={"command": "rm x"},
        **CALL,
    )
    await storage.pending.add([request])
    assert await storage.left_behind("lab") == {"approvals"}
    assert await storage.left_behind("other") == frozenset()


async def test_queued_work_or_a_lease_never_released(storage: SQLStorage) -> None:
    hi = Message(chat_id="c1", role="user", sender="human", content="@a1 hi")
    await storage.inbox.change("lab", InboxChange("c1", append=(Route(message=hi),)))
    assert await storage.left_behind("lab") == {"work"}
    assert await storage.left_behind("other") == frozenset()

    assert await storage.leases.claim("other", "c1", "a process", ttl=30)
    assert await storage.left_behind("other") == {"work"}
