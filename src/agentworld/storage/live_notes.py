"""Live token chunks between processes on PostgreSQL: the channel, the payloads, the statement.

Chunks are never stored (SPEC L3), so a process that shows a chat another process runs (an
HTTP server's event stream, ``send`` on a terminal while a Temporal worker runs the turn)
cannot read them from the log. The process that makes the model call sends them with
``pg_notify`` on the world's live channel (``live_channel``, named like ``log_channel``);
listeners (``events/log_listener.py``) hand them to their followers. A payload is a JSON object:
the sender (``SENDER``, so a process skips its own, which it has from its bus), a number
(identical payloads of one transaction would be folded into one) and the chunk documents as
the event stream sends them. PostgreSQL refuses a payload of 8000 bytes or more: the chunks
are packed into payloads under ``PAYLOAD_LIMIT``, and a chunk too long for one is cut in
pieces. Best effort, as chunks are: a notification lost costs a fragment of the live text,
never the stored answer that follows.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import secrets
from collections.abc import Iterator, Sequence
from typing import Any

from agentworld import strict_json
from agentworld.storage.connection import Connection
from agentworld.storage.statement import Sql

LIVE_PREFIX = "agentworld_live_"
PAYLOAD_LIMIT = 7900
"""Bytes of one payload at most (PostgreSQL's limit is 8000, the channel name aside)."""

_TOKEN = secrets.token_hex(6)
_numbers = itertools.count()


def sender() -> str:
    """This process, as its payloads name it (the pid too: a forked child is another sender)."""
    return f"{os.getpid()}-{_TOKEN}"


def live_channel(world: str) -> str:
    """The channel of a world's live chunks: a fixed prefix and a hash of the case-folded name
    (``event_log.log_channel``'s rule, another prefix)."""
    return LIVE_PREFIX + hashlib.sha256(world.casefold().encode()).hexdigest()[:32]


def payloads(documents: Sequence[dict[str, Any]]) -> list[str]:
    """The chunk ``documents`` packed, in order, into as few payloads as fit."""
    out: list[str] = []
    batch: list[str] = []
    size = 0
    for text in _pieces(documents):
        length = len(text.encode()) + 1
        if batch and size + length > _ROOM:
            out.append(_wrap(batch))
            batch, size = [], 0
        batch.append(text)
        size += length
    if batch:
        out.append(_wrap(batch))
    return out


_ENVELOPE = len('{"from":"","n":,"events":[]}') + 64
_ROOM = PAYLOAD_LIMIT - _ENVELOPE
"""What the chunk documents of one payload may take, the envelope aside."""


def _wrap(texts: list[str]) -> str:
    head = json.dumps({"from": sender(), "n": next(_numbers)})[:-1]
    return f'{head},"events":[{",".join(texts)}]}}'


def _pieces(documents: Sequence[dict[str, Any]]) -> Iterator[str]:
    """Each document as JSON text; one too long for a payload cut into chunks of its content."""
    for document in documents:
        text = strict_json.dumps(document)
        if len(text.encode()) <= _ROOM:
            yield text
            continue
        content = str(document.get("content", ""))
        if len(content) <= 1:
            continue  # not a chunk's text that makes it long: left out, never sent broken
        half = len(content) // 2
        yield from _pieces([{**document, "content": content[:half]},
                            {**document, "content": content[half:]}])


def is_own(payload: str) -> bool:
    """Whether this process sent ``payload`` (told without parsing it)."""
    return payload.startswith(f'{{"from": "{sender()}"')


def read_payload(payload: str) -> tuple[str, list[dict[str, Any]]] | None:
    """The sender and chunk documents of a payload; None when it is not one of ours."""
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("events"), list):
        return None
    events = [e for e in value["events"] if isinstance(e, dict)]
    return str(value.get("from", "")), events


def notify_live(conn: Connection, world: str, texts: Sequence[str]) -> None:
    """Send ``texts`` on ``world``'s live channel, in order, in one statement (PostgreSQL's
    ``pg_notify``, delivered at the commit of this transaction)."""
    if not texts:
        return
    calls = ", ".join(f"pg_notify(:channel, :p{i})" for i in range(len(texts)))
    params: dict[str, Any] = {"channel": live_channel(world)}
    params.update({f"p{i}": text for i, text in enumerate(texts)})
    conn.execute(Sql(f"SELECT {calls}"), params)
