"""``GET /api/worlds/{w}/events``: the world's event stream (Server-Sent Events, SPEC §3.1).

One SSE event per world event: ``id:`` its position in the stored event log, ``event:`` its
kind, ``data:`` its JSON. A client that reconnects with ``Last-Event-ID`` (browsers do it by
themselves) or ``?after=`` gets every event after that one, once, in order. Token chunks (``sse``
events of phase ``chunk``) are live only and carry no ``id:``. Without a position the stream
starts with the next event. Comments keep idle connections open; there is no idle cut-off.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from agentworld.redaction import redact
from agentworld.server.deps import AW, ERRORS, Config, WorldName
from agentworld.server.errors import ApiError
from agentworld.server.feed import FeedItem, Feeds

router = APIRouter(prefix="/api/worlds", responses=ERRORS)

_STREAM: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "text/event-stream: `id:` log position, `event:` kind, `data:` JSON",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}


@router.get("/{world}/events", response_class=EventSourceResponse, responses=_STREAM, tags=["events"])
async def events(
    request: Request,
    world: WorldName,
    aw: AW,
    config: Config,
    chat: Annotated[str | None, Query(description="Only this chat's events.")] = None,
    after: Annotated[
        int | None, Query(ge=0, description="Resume after this event id (as Last-Event-ID).")
    ] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> EventSourceResponse:
    await aw.get_world(world)
    if chat is not None:
        await aw.get_chat(world, chat)
    start = after
    if last_event_id is not None and last_event_id.strip():
        if not last_event_id.strip().isdigit():
            raise ApiError(400, "bad_request", "Last-Event-ID must be an event id (a number)")
        start = int(last_event_id.strip())
    feeds: Feeds = request.app.state.feeds
    return EventSourceResponse(
        _stream(feeds, world, chat, start),
        ping=config.keepalive_seconds,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _stream(
    feeds: Feeds, world: str, chat: str | None, start: int | None
) -> AsyncIterator[ServerSentEvent]:
    async with feeds.following(world) as feed:
        after = feed.head if start is None else start
        yield ServerSentEvent(comment=f"following world {world} after {after}", retry=1000)
        async for item in feed.follow(after, chat_id=chat):
            yield _frame(item)


def _frame(item: FeedItem) -> ServerSentEvent:
    return ServerSentEvent(
        data=json.dumps(_public(item), ensure_ascii=False, separators=(",", ":")),
        event=item.kind,
        id=str(item.seq) if item.seq is not None else None,
    )


def _public(item: FeedItem) -> dict[str, Any]:
    """Secrets masked in what tools, approvals and errors report, as in the logs; what people
    and agents said is shown as said (the transcript is theirs)."""
    document = item.document
    for key in ("detail", "context", "data"):
        if isinstance(document.get(key), dict) and document[key]:
            document = {**document, key: redact(document[key])}
    return document
