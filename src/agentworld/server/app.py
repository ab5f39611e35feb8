"""The FastAPI application: ``create_app(db=...)`` for embedding and tests, and what
``agentworld serve`` runs (SPEC I3, §3.1).

The app owns one ``AgentWorld`` (long-lived: a request waits for its own chat only) and the
event feeds; both open when the app starts and close, with every task they own, when it
stops. Requests pass the guard (``security.Guard``) before any route runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from agentworld import tracing
from agentworld.agent_world import AgentWorld
from agentworld.events.bus import EventBus
from agentworld.server import (
    routes_catalog,
    routes_events,
    routes_messages,
    routes_questions,
    routes_work,
    routes_world_files,
)
from agentworld.server.config import ServerConfig
from agentworld.server.deps import ERRORS
from agentworld.server.errors import install_error_handlers
from agentworld.server.feeds import Feeds
from agentworld.server.responses import JSONResponse
from agentworld.server.schemas import Health
from agentworld.server.security import Guard
from agentworld.storage.event_log import EventLog
from agentworld.webui import mount_ui

API_VERSION = "1"


def create_app(
    db: str | None = None,
    *,
    config: ServerConfig | None = None,
    agent_world: AgentWorld | None = None,
) -> FastAPI:
    """The HTTP API over the database ``db`` (or over an ``AgentWorld`` the embedder made and
    opened; it is then not closed here)."""
    settings = config or ServerConfig()
    settings.check()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tracing.setup_tracing()  # an app served without the CLI (uvicorn agentworld...) sends traces too
        owned = agent_world is None
        aw = agent_world or AgentWorld(db, long_lived=True)
        if owned:
            await aw.__aenter__()

        def bus_of(world: str) -> EventBus | None:
            runtime = aw.started_runtime(world)
            return runtime.bus if runtime is not None else None

        feeds = Feeds(
            EventLog(aw.storage),
            bus_of,
            poll=settings.poll_seconds,
            safety_poll=settings.safety_poll_seconds,
        )
        app.state.agent_world = aw
        app.state.feeds = feeds
        try:
            yield
        finally:
            await feeds.aclose()
            if owned:
                await aw.close()

    app = FastAPI(
        title="Agent World",
        version=API_VERSION,
        summary="Worlds of LLM agents: worlds, agents, chats, approvals, and a resumable event stream.",
        lifespan=lifespan,
        responses=ERRORS,
        default_response_class=JSONResponse,
    )
    app.state.config = settings
    install_error_handlers(app)

    @app.get("/health", response_model=Health, tags=["server"])
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    # Uptime checkers send HEAD; kept out of the schema, which documents GET.
    app.add_api_route("/health", health, methods=["HEAD"], include_in_schema=False)

    app.include_router(routes_world_files.router)
    app.include_router(routes_catalog.router)
    app.include_router(routes_messages.router)
    app.include_router(routes_work.router)
    app.include_router(routes_questions.router)
    app.include_router(routes_events.router)
    mount_ui(app)  # the web UI at / (static files; nothing in the OpenAPI schema)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_credentials=True,
            allow_methods=["GET", "POST", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
        )
    app.add_middleware(Guard, config=settings)
    return app
