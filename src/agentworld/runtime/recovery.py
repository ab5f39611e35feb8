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

from agentworld.models import World
from agentworld.models.records import INTERRUPTED
from agentworld.storage.tool_logs import runner_alive

if TYPE_CHECKING:
    from agentworld.models.pending import PendingCall
    from agentworld.storage.sql import SQLStorage


async def recover_interrupted(storage: SQLStorage, world: World) -> int:
    """Tool runs whose process died are logged as interrupted (SPEC A6). The loop they
    belong to is still in its chat's inbox: whoever runs the chat next gives the call an
    "interrupted" result (``tool_calls.run_tool_calls``), never runs it again."""
    recovered = 0
    for entry in await storage.tool_logs.running(world.name):
        if runner_alive(entry.runner):
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
