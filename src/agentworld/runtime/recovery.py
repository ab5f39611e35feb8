"""What stopped processes left in a world, resumed when a runtime starts (SPEC A6, A7).

A tool run whose process died is logged as interrupted; an approval request whose time ran
out while no process watched it is denied, and a question nobody answered in time ends. Both are looked for by every runtime that starts
and found rarely, so the machinery that acts on them -- ``runtime.approvals``, the tool
executor, the policy rules they bring -- is imported only when something is found: a process
whose turns call no tool never loads it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from agentworld.models import World, utc_now
from agentworld.models.records import INTERRUPTED
from agentworld.storage.tool_logs import runner_alive

if TYPE_CHECKING:
    from agentworld.models.pending import PendingCall
    from agentworld.models.records import ToolLogEntry
    from agentworld.storage.sql import SQLStorage


async def recover_interrupted(storage: SQLStorage, world: World) -> int:
    """Tool runs whose process died are logged as interrupted (SPEC A6). The loop they
    belong to is still in its chat's inbox: whoever runs the chat next gives the call an
    "interrupted" result (``tool_calls.run_tool_calls``), never runs it again."""
    return await _interrupt(storage, world.name, lambda entry: not runner_alive(entry.runner))


async def _interrupt(
    storage: SQLStorage, world: str, stopped: Callable[[ToolLogEntry], bool]
) -> int:
    """Log the world's ``running`` tool runs that ``stopped`` picks as interrupted."""
    recovered = 0
    for entry in await storage.tool_logs.running(world):
        if not stopped(entry):
            continue
        await storage.tool_logs.finish(
            entry.seq, status="interrupted", output={"error": INTERRUPTED}, duration_ms=0.0
        )
        recovered += 1
    return recovered


async def expire_overdue(
    storage: SQLStorage, world: World, expire: Callable[[World, PendingCall], Awaitable[bool]]
) -> int:
    """End every overdue approval request and question of the world with ``expire`` (checked
    on access and at start; the timers of ``runtime.approval_timers`` make it punctual while a
    process runs)."""
    waiting = await storage.pending.find(world.name)
    due = [
        p for p in waiting
        if p.kind in ("approval", "question") and p.waited_longer_than(world.approval_timeout)
    ]
    expired = 0
    for pending in due:
        if await expire(world, pending):
            expired += 1
    return expired


async def interrupt_chat_runs(storage: SQLStorage, world: str, chat_id: str) -> int:
    """The chat's tool runs still logged ``running`` are logged interrupted, whatever host ran
    them: a Temporal worker is told by Temporal that the previous attempt's worker is gone (a
    retried activity), which no process check can tell across hosts. Never run again (SPEC S2)."""
    return await _interrupt(storage, world, lambda entry: entry.chat_id == chat_id)


async def expire_chat_due(
    storage: SQLStorage,
    world: World,
    chat_id: str,
    expire: Callable[[World, PendingCall], Awaitable[bool]],
) -> float | None:
    """End the chat's overdue approval requests and questions with ``expire``; return the
    seconds until its next one is due (None: none waits) — a Temporal workflow's timer."""
    due: float | None = None
    for pending in await storage.pending.find(world.name, chat_id=chat_id):
        if pending.kind not in ("approval", "question") or pending.status != "pending":
            continue
        left = world.approval_timeout - (utc_now() - pending.created_at).total_seconds()
        if left <= 0:
            await expire(world, pending)
        else:
            due = left if due is None else min(due, left)
    return due
