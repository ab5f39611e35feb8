"""A person takes a chat back to an earlier point: a message edited, or deleted with what
followed (SPEC K2).

The cut runs under the chat's lease, as a stop does (``ChatRunners.stopped``): this process's
runner for the chat is cancelled first (a running tool killed), and a chat another process
runs is refused (``BusyError``). Then one transaction (``storage.cuts``) removes the message
and everything after it — and, for an edit, posts the new text from the same sender in its
place with its route queued; once the lease is let go, the chat's runner answers it. A batch
of tool calls an agent made before the message keeps its calls, but their results said after it
went: each such call gets a result that says so (its tool log, if it still ran, is closed as
interrupted), so the agent's memory stays whole. This process forgets its cached memories of the
chat; other processes see the chat's count of cuts change and read their memories afresh
(``runtime.memory_cache``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentworld.errors import BusyError
from agentworld.models import Message
from agentworld.models.events import MessageEvent
from agentworld.models.work import InboxChange, Route
from agentworld.routing.messages import is_routable
from agentworld.runtime.runners import ChatRunners
from agentworld.runtime.turn import unfinished_calls
from agentworld.runtime.turn_context import TurnContext
from agentworld.storage.cuts import Cut, refuse_unless_editable

if TYPE_CHECKING:
    from agentworld.runtime.temporal_runners import TemporalRunners

RESULT_REMOVED = (
    "removed: {by} took the conversation back to before this call's result; it may or may not "
    "have run. Check its effects before relying on it."
)
"""The result of a call whose result a cut removed while the call stays (see the module
docstring)."""


@dataclass(frozen=True)
class CutOutcome:
    """What a cut removed and, for an edit, the message that took the edited one's place."""

    cut: Cut
    message: Message | None = None

    @property
    def removed(self) -> tuple[str, ...]:
        """The transcript messages removed, by id, in order."""
        return self.cut.removed


async def cut_chat(
    ctx: TurnContext,
    runners: ChatRunners | TemporalRunners,
    world: str,
    chat_id: str,
    message_id: str,
    *,
    text: str | None = None,
    sender: str | None = None,
    actor: str = "human",
) -> CutOutcome:
    """Remove message ``message_id`` of the chat and everything after it; with ``text``,
    replace it (a person's message only: ``NotEditableError`` otherwise) by a new message from
    ``sender`` (default: the same sender) in its place, which the world then answers."""
    asked = await ctx.storage.cuts.message(world, chat_id, message_id)  # unknown: refused now
    new = None
    inbox = None
    if text is not None:
        refuse_unless_editable(asked)  # before this process stops anything it runs in the chat
        new = Message(chat_id=chat_id, role="user", sender=sender or asked.sender, content=text)
        if is_routable(new):
            inbox = InboxChange(chat_id, append=(Route(message=new),))
    async with runners.stopped(chat_id) as held:
        if not held:
            raise BusyError(
                f"chat {chat_id!r} is being run by another process: stop its work there, or"
                " retry when it has finished"
            )
        cut = await ctx.storage.cuts.cut(
            world, chat_id, message_id, owner=runners.owner, actor=actor, replacement=new, inbox=inbox
        )
        ctx.memory.forget(world, chat_id=chat_id)
        await _close_open_calls(ctx, world, chat_id, by=actor)
        # Stored with the cut (``events.persistence``); here for this process's subscribers.
        await ctx.bus.publish(cut.event)
        if new is not None:
            await ctx.bus.publish(MessageEvent(world=world, message=new))
    return CutOutcome(cut, new)


async def _close_open_calls(ctx: TurnContext, world: str, chat_id: str, *, by: str) -> None:
    """Give every call of an agent's latest batch that the cut left without a result (and that
    nobody outside the loop answers) a result saying so, in the agent's memory only."""
    _, everyone = await ctx.storage.world_and_agents(world)
    entries: list[tuple[str | None, Message]] = []
    for agent in (a.name for a in everyone):
        found = unfinished_calls(await ctx.storage.memory(world, agent, chat_id))
        if found is None:
            continue
        batch_id, calls = found
        waited = await ctx.storage.pending.waited_for(world, batch_id, unanswered_only=True)
        for call in calls:
            if call.id in waited:
                continue
            await ctx.storage.tool_logs.interrupt(world, call.id, reason=f"removed by {by}")
            text = json.dumps({"error": RESULT_REMOVED.format(by=by)})
            entries.append(
                (
                    agent,
                    Message.tool_result(
                        chat_id=chat_id, agent=agent, tool_call_id=call.id, content=text, batch_id=batch_id
                    ),
                )
            )
    await ctx.storage.append_messages(world, entries)
