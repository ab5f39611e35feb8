"""What routes share: the ``AgentWorld`` of the app, its settings, the parameters that name a
world, an agent or a chat (one definition each, so every route documents them alike), and the
error responses every route documents (so the OpenAPI schema lists each status a route can
answer with)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request

from agentworld.agent_world import AgentWorld
from agentworld.documents import world_doc
from agentworld.models import World
from agentworld.server.config import ServerConfig
from agentworld.server.feeds import Feeds
from agentworld.server.masks import shown_mcp_config
from agentworld.server.schemas import ErrorDoc


def _agent_world(request: Request) -> AgentWorld:
    aw: AgentWorld = request.app.state.agent_world
    return aw


def _config(request: Request) -> ServerConfig:
    config: ServerConfig = request.app.state.config
    return config


def _feeds(request: Request) -> Feeds:
    feeds: Feeds = request.app.state.feeds
    return feeds


AW = Annotated[AgentWorld, Depends(_agent_world)]
Config = Annotated[ServerConfig, Depends(_config)]
LiveFeeds = Annotated[Feeds, Depends(_feeds)]


async def _world_name(
    world: Annotated[str, Path(description="The world's name, in any case.")], aw: AW
) -> str:
    """The stored spelling, as the command line finds it: ``/api/worlds/team`` is ``Team``."""
    return await aw.world_name(world)


WorldName = Annotated[str, Depends(_world_name)]
AgentName = Annotated[str, Path(description="The agent's name.")]
ChatId = Annotated[str, Path(description="The chat's id.")]
ChatFilter = Annotated[str | None, Query(description="Only this chat.")]
MAX_POSITION = 2**63 - 1
"""The largest position (``?after=``) a route takes: positions are 64-bit integers in both
databases, and a larger number cannot even be compared with them (it overflows the driver)."""

_STATUS_TEXT = {
    400: "Bad request: a setting or argument the system refuses, or a Host not this server",
    401: "Missing or wrong token",
    404: "Unknown world, agent, chat, approval or route",
    409: "Already exists, already answered, or in use by work running now",
    413: "Body too large",
    415: "The body is not JSON",
    422: "The body or a parameter does not match the schema",
}
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorDoc, "description": text} for status, text in _STATUS_TEXT.items()
}
ERRORS[503] = {
    "model": ErrorDoc,
    "description": "The database cannot be reached (or is locked or damaged); try again later",
    "headers": {
        "Retry-After": {
            "description": "Seconds to wait before trying again",
            "schema": {"type": "integer"},
        }
    },
}


def public_world(world: World) -> dict[str, Any]:
    """The world document with secrets in its MCP configuration masked (``env`` values,
    headers), as the logs mask them: a response is read by more eyes than the settings file.
    Sent back unchanged, a mask keeps the secret (``masks.keep_masked_secrets``)."""
    doc = world_doc(world)
    if doc.get("mcpConfig"):
        doc["mcpConfig"] = shown_mcp_config(doc["mcpConfig"])
    return doc
