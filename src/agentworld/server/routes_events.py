"""``GET /api/worlds/{w}/events``: the world's event stream (Server-Sent Events, SPEC §3.1).

One SSE event per world event: ``id:`` its position in the stored event log, ``event:`` its
kind, ``data:`` its JSON. A client that reconnects with ``Last-Event-ID`` (browsers do it by
themselves) or ``?after=`` gets every event after that one, once, in order. Token chunks (``sse``
events of phase ``chunk``) are live only and carry no ``id:``. Without a position the stream
starts with the next event. Comments keep idle connections open; there is no idle cut-off.
A stream ends when its world is deleted here: after what came before, with the ``crud`` event
that deletes it (no ``id:``: the world's log goes with it; ``feeds.Feeds.deleting``).

A position beyond the world's last event is refused (400): positions only grow, so every
event up to it that comes later would be skipped without a word.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query
from sse_starlette import EventSourceResponse, ServerSentEvent

from agentworld.errors import StorageError
from agentworld.events.feed import FeedItem, live_item
from agentworld.models.events import CrudEvent
from agentworld.redaction import redact
from agentworld.server.deps import AW, ERRORS, MAX_POSITION, Config, LiveFeeds, WorldName
from agentworld.server.errors import RETRY_AFTER_SECONDS, ApiError, logger
from agentworld.server.feeds import Feeds
from agentworld.server.json_body import OneValuePerKeyRoute
from agentworld.server.responses import json_text

router = APIRouter(prefix="/api/worlds", responses=ERRORS, route_class=OneValuePerKeyRoute)

_STREAM: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "text/event-stream: `id:` log position, `event:` kind, `data:` JSON",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}
DAY_MS = 86_400_000
_POSITION = re.compile(r"[0-9]{1,19}")
"""A position as ``Last-Event-ID`` gives it: ASCII digits (``str.isdigit`` also takes '²',
which ``int`` refuses), as many as a 64-bit position has (``int`` refuses over 4,300)."""


@router.get("/{world}/events", response_class=EventSourceResponse, responses=_STREAM, tags=["events"])
async def events(
    world: WorldName,
    aw: AW,
    config: Config,
    feeds: LiveFeeds,
    chat: Annotated[str | None, Query(description="Only this chat's events.")] = None,
    after: Annotated[
        int | None,
        Query(ge=0, le=MAX_POSITION, description="Resume after this event id (as Last-Event-ID)."),
    ] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> EventSourceResponse:
    deleted = feeds.last_deleted(world)  # before the world is found: see ``_stream``
    await aw.get_world(world)
    if chat is not None:
        await aw.get_chat(world, chat)
    start, given = after, "?after="
    if last_event_id is not None and last_event_id.strip():
        if not _POSITION.fullmatch(last_event_id.strip()):
            raise ApiError(400, "bad_request", "Last-Event-ID must be an event id (a number)")
        start, given = int(last_event_id.strip()), "Last-Event-ID: "
    if start is not None and start > (head := await feeds.head(world)):
        raise ApiError(
            400, "bad_request",
            f"{given}{start} is beyond the last event of world {world!r} ({head}): resuming "
            "there would skip every event up to it; give an id the stream or a transcript "
            "page gave",
        )
    if start is None:
        # From now: the head as the request finds it, before the response goes out. A client
        # that has the response may post at once and must see its message; the feed's own
        # start (a listener, a read) can come after that commit on PostgreSQL.
        start = await feeds.head(world)
    return EventSourceResponse(
        _stream(feeds, world, chat, start, deleted),
        ping=config.keepalive_seconds,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _stream(
    feeds: Feeds, world: str, chat: str | None, start: int | None, deleted: CrudEvent | None
) -> AsyncIterator[ServerSentEvent]:
    try:
        async with feeds.following(world) as feed:
            if (gone := feeds.last_deleted(world)) is not None and gone is not deleted:
                # Deleted since the request found it: the feed here may be of a world created
                # after it under the same name, which this client never asked for.
                yield _frame(live_item(gone))
            else:
                after = feed.head if start is None else start
                yield ServerSentEvent(comment=f"following world {world} after {after}", retry=1000)
                async for item in feed.follow(after, chat_id=chat):
                    yield _frame(item)
    except StorageError as exc:
        # The database went away between the request's checks and the feed's first read: the
        # client reconnects from where it was, later (a follower's reads wait and try again).
        logger.error("event stream of world %s cannot start: %s", world, exc)
        yield ServerSentEvent(comment=f"cannot start: {exc}", retry=RETRY_AFTER_SECONDS * 1000)
        return
    # The world was deleted (``follow`` ends with it). A browser's EventSource reconnects by
    # itself, to a 404 or to a world created meanwhile under the name: ask it to wait a day.
    yield ServerSentEvent(comment=f"world {world} was deleted", retry=DAY_MS)


def _frame(item: FeedItem) -> ServerSentEvent:
    return ServerSentEvent(
        data=json_text(_public(item)),  # a lone surrogate stored long ago cannot cut the stream
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
