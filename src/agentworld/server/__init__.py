"""The HTTP API (SPEC I3, §3.1): REST for what the CLI does, and one resumable event stream per
world. ``create_app(db=...)`` builds the app; ``agentworld serve`` runs it with uvicorn.

Layout: ``app`` (assembly, lifespan), ``security`` (Host, token, body limits), ``errors``
(refusals as ``{"error": {...}}``), ``schemas`` (bodies and documents), ``routes_catalog`` /
``routes_work`` / ``routes_events`` (the routes), ``feeds`` (the event stream's readers, over ``events.feed``),
``status`` (what a world is doing), ``config`` (``ServerConfig``).
"""

from __future__ import annotations

from agentworld.server.app import create_app
from agentworld.server.config import ServerConfig, is_loopback

__all__ = ["ServerConfig", "create_app", "is_loopback"]
