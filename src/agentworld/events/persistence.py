"""The subscriber that writes events to the world's event log (``storage/event_log.py``):
everything except streaming chunks and what is stored with a step (a message is stored by
whoever publishes it, before the event, and gets its place in the log in that same
transaction; so does the ``end`` of the model call that produced it)."""

from __future__ import annotations

from agentworld.events.bus import EventBus
from agentworld.models.events import MessageEvent, SSEEvent, WorldEvent
from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage


def persist_events(bus: EventBus, storage: SQLStorage) -> None:
    """Subscribe the persistence handler; call it before any other subscription (SPEC E2)."""
    log = EventLog(storage)

    async def persist(event: WorldEvent) -> None:
        if isinstance(event, SSEEvent) and event.phase in ("chunk", "end"):
            return
        if isinstance(event, MessageEvent):
            return  # stored by its publisher, in the transcript, with what it causes
        await log.append([event])

    bus.subscribe(persist, name="persistence")
