"""The event bus and the subscriber that persists events."""

from __future__ import annotations

from agentworld.events.bus import EventBus, Handler
from agentworld.events.persistence import persist_events

__all__ = ["EventBus", "Handler", "persist_events"]
