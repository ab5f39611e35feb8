"""The subscriber that writes events to the world's event log (``storage/event_log.py``):
everything except streaming chunks and what is stored with a step (a message is stored by
whoever publishes it, before the event, and gets its place in the log in that same
transaction; so do the events of the step — see ``stored_with_its_step``)."""

from __future__ import annotations

from agentworld.events.bus import EventBus
from agentworld.models.events import (
    ApprovalEvent,
    CrudEvent,
    MessageEvent,
    QuestionEvent,
    SSEEvent,
    ToolEvent,
    WorldEvent,
)
from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage


def stored_with_its_step(event: WorldEvent) -> bool:
    """Whether ``event`` is not this subscriber's to store: stream chunks are live only; an
    ``sse`` end is stored with the answer it ends, a ``tool`` start with the tool log's start,
    a ``tool`` result or error with the result message, a client call's ``tool`` pending and
    every ``approval`` and ``question`` event with the step that asks or answers, a message
    ``crud`` event with the cut it announces (``storage.cuts``) — each in that step's
    transaction."""
    match event:
        case SSEEvent():
            return event.phase in ("chunk", "end")
        case ToolEvent():
            return event.phase in ("start", "result", "error", "pending")
        case ApprovalEvent() | QuestionEvent():
            return True
        case CrudEvent():
            return event.entity == "message"
        case _:
            return False


def persist_events(bus: EventBus, storage: SQLStorage) -> None:
    """Subscribe the persistence handler; call it before any other subscription (SPEC E2)."""
    log = EventLog(storage)

    async def persist(event: WorldEvent) -> None:
        if stored_with_its_step(event):
            return
        if isinstance(event, MessageEvent):
            return  # stored by its publisher, in the transcript, with what it causes
        await log.append([event])

    bus.subscribe(persist, name="persistence")
