"""Stopping a chat's work on a person's word (Ctrl-C in ``agentworld talk``, a stop button).

A stop is not a crash: the person wants the agents to stop answering, not to have the work
finished later. So, once this process's runner for the chat is cancelled (a running shell
command is killed with every process it started: the cancelled call waits until its guard has
killed the command's group, or its sandbox's PID namespace has ended), the stop — holding the chat's lease, so
no other process starts the work again meanwhile — gives every call of an agent's unfinished
batch a result (``stopped while it ran`` when it had started, ``not run`` otherwise; calls a
person or the application is answering keep waiting), removes the chat's queued work, and
says in the transcript who stopped it: one transaction. What was stored stays.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agentworld.models import Message
from agentworld.models.events import MessageEvent, SystemEvent
from agentworld.models.work import InboxChange
from agentworld.runtime.turn import unfinished_calls
from agentworld.runtime.turn_context import TurnContext

STOPPED_WHILE_RUNNING = (
    "interrupted: {by} stopped the turn while this tool ran; it was cancelled and may or may "
    "not have completed. Check its effects before retrying."
)
KILLED_WHILE_RUNNING = (
    "interrupted: {by} stopped the turn while this command ran; it was killed with every "
    "process it started, and may have done part of its work. Check its effects before retrying."
)
PROCESS_TOOLS = frozenset({"shell_cmd"})
"""Tools whose call is a process tree that a cancelled call kills whole (its guard's group
kill, or its sandbox's PID namespace): a stop can say it killed them. Any other tool's call
is cancelled here, and what it set going elsewhere (an MCP server's work) may go on."""
STOPPED_BEFORE_RUNNING = "not run: {by} stopped the turn before this call ran."


@dataclass(frozen=True)
class StopOutcome:
    """What a stop did: the items it dropped and the calls it closed (for the caller to show)."""

    stopped: bool
    """False when another process runs the chat (it must be stopped there) or nothing ran."""
    dropped: int = 0
    interrupted: tuple[str, ...] = ()
    """Calls that had started and were cancelled."""
    killed: tuple[str, ...] = ()
    """Those of ``interrupted`` whose processes were killed (``PROCESS_TOOLS``)."""
    skipped: tuple[str, ...] = ()
    """Calls that never ran."""
    message: Message | None = None
    """The transcript's note of the stop."""


async def stop_chat(ctx: TurnContext, world: str, chat_id: str, *, by: str) -> StopOutcome:
    """Close the chat's unfinished work as stopped by ``by``, under the chat's lease (its
    runner was cancelled first, and ``ChatRunners.stopped`` holds the lease meanwhile)."""
    items = await ctx.storage.inbox.items(world, chat_id)
    _, everyone = await ctx.storage.world_and_agents(world)
    agents = [a.name for a in everyone]  # an approved call's runner names no agent: ask all
    entries: list[tuple[str | None, Message]] = []
    interrupted: list[str] = []
    killed: list[str] = []
    skipped: list[str] = []
    for agent in agents:
        found = unfinished_calls(await ctx.storage.memory(world, agent, chat_id))
        if found is None:
            continue
        batch_id, calls = found
        waited = await ctx.storage.pending.waited_for(world, batch_id, unanswered_only=True)
        for call in calls:
            if call.id in waited:
                continue  # a person (or the application) still answers it; not ours to close
            started = await ctx.storage.tool_logs.interrupt(
                world, call.id, reason=f"stopped by {by}"
            )
            (interrupted if started else skipped).append(call.id)
            text = STOPPED_BEFORE_RUNNING
            if started and call.function.name in PROCESS_TOOLS:
                killed.append(call.id)
                text = KILLED_WHILE_RUNNING
            elif started:
                text = STOPPED_WHILE_RUNNING
            text = text.format(by=by)
            result = Message.tool_result(
                chat_id=chat_id,
                agent=agent,
                tool_call_id=call.id,
                content=json.dumps({"error": text}),
                batch_id=batch_id,
            )
            entries += [(agent, result), (None, result)]
    if not items and not entries:
        return StopOutcome(stopped=False)
    note = Message(
        chat_id=chat_id,
        role="system",
        sender="system",
        content=f"{by} stopped the agents' work in this chat.",
    )
    entries.append((None, note))
    await ctx.storage.append_messages(
        world, entries, inbox=InboxChange(chat_id, drop=tuple(q.item_id for q in items))
    )
    ctx.memory.forget(world)
    for owner_of, message in entries:
        if owner_of is None:
            await ctx.bus.publish(MessageEvent(world=world, message=message))
    await ctx.bus.publish(
        SystemEvent(
            world=world,
            level="info",
            text=note.content or "",
            chat_id=chat_id,
            reason="stopped",
            context={"reason": "stopped", "by": by, "dropped": len(items)},
        )
    )
    return StopOutcome(
        stopped=True,
        dropped=len(items),
        interrupted=tuple(interrupted),
        killed=tuple(killed),
        skipped=tuple(skipped),
        message=note,
    )

