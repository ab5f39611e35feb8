"""The subscriber that writes events to storage: everything except streaming chunks and
messages (a message is stored by whoever publishes it, before the event)."""

from __future__ import annotations

from agentworld.events.bus import EventBus
from agentworld.models.events import MessageEvent, SSEEvent, WorldEvent
from agentworld.storage.sql import SQLStorage


def persist_events(bus: EventBus, storage: SQLStorage) -> None:
    """Subscribe the persistence handler; call it before any other subscription (SPEC E2)."""

    async def persist(event: WorldEvent) -> None:
        if isinstance(event, SSEEvent) and event.phase == "chunk":
            return
        if isinstance(event, MessageEvent):
            return  # stored by its publisher, in the transcript, with what it causes
        await storage.append_events([event])

    bus.subscribe(persist, name="persistence")
