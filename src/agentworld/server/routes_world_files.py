"""A world as a file over HTTP (SPEC §7.4 D1): the file ``agentworld export`` writes, and the
plan/apply of ``agentworld apply``, through the same code (:mod:`agentworld.world_apply`).

The file comes as the request's body (``Content-Type: application/toml``), so it has no
directory: ``promptFile`` and relative paths are refused rather than read relative to wherever
the server runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from agentworld.errors import InvalidInputError
from agentworld.server.deps import AW, ERRORS, WorldName
from agentworld.server.errors import ApiError
from agentworld.server.json_body import OneValuePerKeyRoute
from agentworld.server.responses import JSONResponse
from agentworld.server.schemas import ErrorDoc
from agentworld.world_apply import apply_file, export_text, plan_doc
from agentworld.world_file import parse_world_text

router = APIRouter(prefix="/api/worlds", responses=ERRORS, route_class=OneValuePerKeyRoute)

TOML = "application/toml"
"""The media type of a world file, the one non-JSON body the API takes."""

APPLY_PATH = "/api/worlds/apply"


class PlanChange(BaseModel):
    """One step of the plan: create, update or delete a world, an agent or one of the world's
    own policy rules, and the file's keys that change."""

    model_config = ConfigDict(extra="forbid")
    action: Literal["create", "update", "delete"]
    kind: Literal["world", "agent", "rule"]
    name: str
    fields: list[str]


class PlanDoc(BaseModel):
    """What ``apply --json`` prints: the world, the changes, the agents and rules kept (not in
    the file, no prune), and whether this was a dry run."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    world: str
    changes: list[PlanChange]
    kept: list[str]
    kept_rules: list[str] = Field(alias="keptRules")
    dry_run: bool = Field(alias="dryRun")


@router.get(
    "/{world}/export",
    responses={200: {"description": "The world file", "content": {TOML: {"schema": {"type": "string"}}}}},
    tags=["worlds"],
)
async def export_world(world: WorldName, aw: AW) -> PlainTextResponse:
    """The world file ``agentworld export`` writes: settings and agents, no secrets."""
    text = await export_text(aw, world)
    return PlainTextResponse(
        text,
        media_type=f"{TOML}; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{world}.toml"'},
    )


@router.post(
    "/apply",
    response_model=PlanDoc,
    responses={403: {"model": ErrorDoc, "description": "Sent by a page of another site (``cross_site``), or a world file sent without a body"}},
    openapi_extra={"requestBody": {"required": True, "content": {TOML: {"schema": {"type": "string"}}}}},
    tags=["worlds"],
)
async def apply_world_file(
    request: Request,
    aw: AW,
    dry_run: Annotated[bool, Query(alias="dryRun", description="Show the plan; change nothing.")] = False,
    prune: Annotated[bool, Query(description="Delete agents and rules the file does not hold.")] = False,
) -> JSONResponse:
    """Make the world the file describes match it (``agentworld apply``); the answer is the
    plan. A file that is not valid UTF-8 TOML, names an unknown key, holds a secret, or uses
    ``promptFile`` or a relative path is refused (422) with its line and key."""
    raw = await request.body()
    try:
        wanted = parse_world_text(raw.decode("utf-8"), Path("world.toml"), None)
        planned = await apply_file(aw, wanted, dry_run=dry_run, prune=prune)
    except UnicodeDecodeError:
        raise ApiError(422, "invalid_input", "world.toml: the file is not UTF-8 text") from None
    except InvalidInputError as exc:
        raise ApiError(422, "invalid_input", str(exc)) from None
    return JSONResponse(plan_doc(wanted.name, planned, dry_run))
