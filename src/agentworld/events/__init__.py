"""The event bus, the subscribers that persist events and relay live chunks, and the readers
that follow a world's event log (``feed``, ``log_listener``)."""

from __future__ import annotations

from agentworld.events.bus import EventBus, Handler
from agentworld.events.persistence import persist_events

__all__ = ["EventBus", "Handler", "persist_events"]
