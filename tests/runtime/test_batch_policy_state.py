"""A batch of tool calls is authorized from the world's settings and grants read once, with the
batch's call-id check, and that read is fresh: a grant revoked elsewhere before a batch no
longer covers its calls."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.approval.decisions import Allow, AskUser
from agentworld.approval.grants import Grant, PolicyState
from agentworld.models import Agent, Message, World
from agentworld.runtime.authorizer import PolicyAuthorizer
from agentworld.shell import SHELL_TOOL
from agentworld.storage.sql import SQLStorage
from agentworld.testing.openai_wire import Reply, ToolCallSpec
from agentworld.tools.registry import ToolContext
from agentworld.tools.world_tools import BUILTIN_TOOLS


def tool_then_answer(*calls: ToolCallSpec) -> Any:
    """Ask for ``calls`` first; once results (or a refusal) are back, answer."""

    def respond(body: dict[str, Any]) -> Reply:
        return Reply.text("done") if body["messages"][-1]["role"] == "tool" else Reply.tools(*calls)

    return respond


SHELL = next(tool for tool in BUILTIN_TOOLS if tool.name == SHELL_TOOL)
TOUCH = {"command": "touch report.txt"}


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(db_url) as store:
        await store.create_world(World(name="lab", working_dir="/tmp"))
        await store.create_agent(Agent(world="lab", name="a1", provider="openai", model="m"))
        yield store


def session_grant(grant_id: str, chat_id: str = "c1") -> Grant:
    return Grant(grant_id=grant_id, world="lab", scope="session", tool_name=SHELL_TOOL, agent="a1", chat_id=chat_id, roots=frozenset({"touch"}))  # fmt: skip


async def test_one_read_gives_the_used_ids_and_the_world_and_grants_in_force(storage: SQLStorage) -> None:
    await storage.approvals.add_grant(session_grant("kept"))
    await storage.approvals.add_grant(session_grant("gone"))
    await storage.approvals.revoke("lab", "gone")
    result = Message.tool_result(chat_id="c1", agent="a1", tool_call_id="call_1", content="ok", batch_id=None)
    await storage.record_agent_step("lab", "a1", [result])

    used, state = await storage.approvals.before_tool_calls("lab", {"call_1", "call_new"})

    assert used == {"call_1"}
    assert state.world == await storage.get_world("lab")
    assert [g.grant_id for g in state.grants] == ["kept"]


async def test_the_authorizer_decides_from_the_state_it_is_given_without_reading_again(
    storage: SQLStorage,
) -> None:
    """A covering grant that is in the batch's state but not (or no longer) stored allows the
    call: the authorizer used what it was given. Without a state it reads storage and asks."""
    authorizer = PolicyAuthorizer(storage)
    context = ToolContext(world="lab", chat_id="c1", agent="a1", working_dir="/tmp")
    state = PolicyState(await storage.get_world("lab"), (session_grant("only-in-state"),))

    given = await authorizer.authorize(SHELL, TOUCH, replace(context, policy=state))
    read = await authorizer.authorize(SHELL, TOUCH, context)

    assert isinstance(given, Allow) and "only-in-state" in given.reason
    assert isinstance(read, AskUser)


async def test_a_grant_revoked_by_another_process_before_the_batch_no_longer_covers_it(
    storage: SQLStorage, db_url: str
) -> None:
    await storage.approvals.add_grant(session_grant("g1"))
    authorizer = PolicyAuthorizer(storage)
    context = ToolContext(world="lab", chat_id="c1", agent="a1", working_dir="/tmp")
    _, before = await storage.approvals.before_tool_calls("lab", {"call_1"})
    assert isinstance(await authorizer.authorize(SHELL, TOUCH, replace(context, policy=before)), Allow)

    async with SQLStorage(db_url) as other:  # another process on the same database
        await other.approvals.revoke("lab", "g1")
    _, after = await storage.approvals.before_tool_calls("lab", {"call_2"})

    assert isinstance(await authorizer.authorize(SHELL, TOUCH, replace(context, policy=after)), AskUser)


async def test_a_grant_revoked_while_the_batchs_first_call_runs_does_not_cover_the_next(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path
) -> None:
    """The state read with the batch authorizes its first call only: the second call of the
    batch, after a tool ran for a while, is authorized from a fresh read."""
    await make_world("a1", working_dir=str(tmp_path))
    chat = (await aw.new_chat("w")).chat_id
    await aw.storage.approvals.add_grant(
        Grant(grant_id="g1", world="w", scope="session", tool_name=SHELL_TOOL, agent="a1", chat_id=chat, roots=frozenset({"sleep", "touch"}))  # fmt: skip
    )
    script.by_agent["a1"] = tool_then_answer(
        ToolCallSpec(name=SHELL_TOOL, arguments='{"command": "sleep 1"}', id="call_sleep"),
        ToolCallSpec(name=SHELL_TOOL, arguments='{"command": "touch after.txt"}', id="call_touch"),
    )
    sending = asyncio.create_task(aw.send("w", "@a1 sleep, then touch", chat_id=chat, timeout=60))
    for _ in range(200):  # until the first call runs
        if await aw.storage.tool_logs.running("w"):
            break
        await asyncio.sleep(0.02)
    assert [log.tool_call_id for log in await aw.storage.tool_logs.running("w")] == ["call_sleep"]

    await aw.storage.approvals.revoke("w", "g1")
    result = await sending

    assert not (tmp_path / "after.txt").exists()
    (waiting,) = result.pending_approvals
    assert waiting.tool_args == {"command": "touch after.txt"}
