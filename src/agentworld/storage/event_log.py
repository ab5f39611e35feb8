"""The world's event log: one increasing sequence over transcript messages and every other
persisted event (SPEC E1), which the HTTP event stream follows and resumes from (SPEC §3.1).

**Writing.** Events other than messages are stored by the persistence subscriber
(``events/persistence.py``) through ``EventLog.append``. A transcript message gets its log row
(kind ``message``, pointing at the message by id, no copy of it) from ``queries.insert_messages``
in the transaction that stores the message, so a message is in the log exactly when it is in the
transcript, and it takes its place in the one order.

**Order as readers see it.** A reader asks for rows after the last ``seq`` it has seen, so a row
must never become visible after a row with a higher ``seq`` of the same world — it would be
skipped for good. SQLite has one writer at a time, and a row's number is taken inside the write
transaction, so numbers become visible in order. PostgreSQL hands out sequence numbers to
concurrent transactions that may commit in any order; so every transaction takes a
transaction-scoped advisory lock for the world before it takes a number
(``lock_world_log``): the next writer of that world gets its number only after the previous one
committed. Numbers are never reused (``schema.events``).

**Telling readers.** On PostgreSQL the same statement that takes a world's lock also queues a
notification on the world's channel (``log_channel``): ``pg_notify`` is delivered when the
transaction commits, and not at all when it rolls back, so a listener (the HTTP server's event
feeds, ``events/log_listener.py``) that reads after its last ``seq`` when told finds the new rows
committed and visible. Notifications of one transaction on one channel are folded into one. The
channel's name is a hash of the world's name — world names are user input, channel names are
SQL identifiers — and two worlds sharing a channel would only cost a read that finds nothing.
SQLite has no such signal: readers in other processes poll.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworld.models.events import EventKind, MessageEvent, WorldEvent
from agentworld.models.llm import usage_json
from agentworld.models.message import Message
from agentworld.storage.connection import Connection
from agentworld.storage.rows import MESSAGE_COLUMNS_SQL, row_message, ts
from agentworld.storage.statement import Sql

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

LOG_LOCK_CLASS = 0x6177_656C
"""The first key of the advisory locks this module takes (``'awel'``), so they cannot collide
with an application's own advisory locks that use the one-key form."""

CHANNEL_PREFIX = "agentworld_log_"
# The lock and the notification in one statement: one round trip per world, as before. Their
# order does not matter, since the notification goes out at commit, when the lock is released.
# PostgreSQL's alone (``lock_world_log`` does nothing on SQLite).
_LOCK = Sql(
    "SELECT pg_advisory_xact_lock(:lock_class, hashtext(:world_key)), pg_notify(:channel, '')"
)
_INSERT = Sql(
    "INSERT INTO events (world, chat_id, kind, payload, created_at, message_id)"
    " VALUES (:world, :chat_id, :kind, :payload, :created_at, :message_id)",
    json_params=("payload",),
)
"""Log rows (``event_row``, ``message_log_rows``), one or many."""
_HEAD = Sql("SELECT max(events.seq) FROM events WHERE events.world = :world_key")
_WORLD_KEPT = Sql("SELECT 1 FROM worlds WHERE worlds.name = :world_key")
_LOGGED_FROM = (
    "SELECT events.seq, events.kind, events.chat_id, events.payload, events.message_id,"
    " messages.message_id AS message_id_1, messages.chat_id AS chat_id_1, messages.role,"
    " messages.sender, messages.agent_id, messages.content, messages.tool_calls,"
    " messages.tool_call_id, messages.reply_to, messages.created_at, messages.input_tokens,"
    " messages.output_tokens"
    " FROM events LEFT OUTER JOIN messages ON messages.world = events.world"
    " AND messages.message_id = events.message_id AND messages.memory_owner IS NULL"
    " WHERE events.world = :world_key AND events.seq > :after_seq"
)
"""The log's rows with their transcript messages (the columns ``row_message`` reads, from the
sixth on; NULL where the message is gone), for a filter and the order to follow."""
_PAGE = " ORDER BY events.seq LIMIT :row_limit"
_LOGGED = Sql(_LOGGED_FROM + _PAGE, columns={"payload": "json"})
_LOGGED_IN_CHAT = Sql(
    _LOGGED_FROM + " AND events.chat_id = :chat_key" + _PAGE, columns={"payload": "json"}
)
TRANSCRIPT_PAGE = Sql(
    f"SELECT {MESSAGE_COLUMNS_SQL} FROM messages WHERE messages.world = :world_key"
    " AND messages.chat_id = :chat_key AND messages.memory_owner IS NULL"
    " AND messages.seq > :after_seq"
    # ``memory_owner`` is NULL in every row here, so ordering by it changes nothing, but it
    # lets PostgreSQL read ``ix_messages_chat`` (world, chat_id, memory_owner, seq) in order
    # and stop at the limit: it does not count ``IS NULL`` as an equality, and ordered by
    # ``seq`` alone it read and sorted every message after ``after`` (benchmarks/README.md,
    # transcript_page.py).
    " ORDER BY messages.memory_owner, messages.seq LIMIT :row_limit"
)
"""Transcript messages after a position, with their positions (``queries.TRANSCRIPT_SINCE`` is
this without the limit)."""


@dataclass(frozen=True)
class LoggedEvent:
    """One event read back from the log: its position, kind and chat, and its JSON document
    (the event model's JSON with aliases — what the event stream sends as ``data``)."""

    seq: int
    kind: EventKind
    chat_id: str | None
    document: dict[str, Any]


@dataclass(frozen=True)
class LogBatch:
    """Events read from the log, and the ``seq`` of the last row looked at (a row can be left
    out — a message deleted since — and the next read must still start after it)."""

    events: list[LoggedEvent]
    last_seq: int
    full: bool
    """The read stopped at its limit: more rows may follow at once."""
    world_gone: bool = False
    """Asked for (``after(..., or_gone=True)``) and the read found nothing: the world itself
    is gone, deleted by another process (its log went with it)."""


@dataclass(frozen=True)
class TranscriptPage:
    """Transcript messages after a position, with where to go on from."""

    messages: list[Message]
    next_after: int
    """The position (``messages.seq``) of the last message returned; ``after`` when none."""
    log_head: int
    """The world's last event-log ``seq`` when the page was read, in the same transaction: a
    client that shows the page and then follows the event stream from here misses nothing."""


# -- writing (inside a caller's transaction) ---------------------------------------------------


def log_channel(world: str) -> str:
    """The PostgreSQL notification channel of a world's log: a fixed prefix and a hash of the
    name, so any world name gives a plain lower-case identifier well under PostgreSQL's 63
    bytes (``LISTEN`` takes an identifier, not a parameter). Case-folded, as names are
    compared: a wake-up too many costs a read, one too few would cost a poll's delay."""
    return CHANNEL_PREFIX + hashlib.sha256(world.casefold().encode()).hexdigest()[:32]


def lock_world_log(conn: Connection, worlds: Iterable[str]) -> None:
    """On PostgreSQL, wait until no other open transaction writes to these worlds' logs, and keep
    them out until this one ends (see the module docstring); and tell the worlds' listeners when
    it commits (``log_channel``). Worlds are locked in sorted order, so two transactions never
    wait for each other. A no-op on SQLite (one writer at a time, no notifications)."""
    if conn.backend != "postgresql":
        return
    for world in sorted(set(worlds)):
        conn.execute(
            _LOCK,
            {"lock_class": LOG_LOCK_CLASS, "world_key": world, "channel": log_channel(world)},
        )


def insert_log_rows(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Append rows to the log, in order, after taking the worlds' locks."""
    if not rows:
        return
    lock_world_log(conn, (row["world"] for row in rows))
    conn.execute(_INSERT, list(rows))


def message_log_rows(message_rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log rows of the transcript messages among these ``messages`` rows (memories are not
    events: a message enters an agent's memory privately); a row's ``trace_id``, when traces
    are sent, is kept as the event's ``traceId``."""
    return [
        {
            "world": row["world"],
            "chat_id": row["chat_id"],
            "kind": "message",
            "payload": {"traceId": row["trace_id"]} if row.get("trace_id") else {},
            "created_at": row["created_at"],
            "message_id": row["message_id"],
        }
        for row in message_rows
        if row["memory_owner"] is None
    ]


def event_row(event: WorldEvent) -> dict[str, Any]:
    return {
        "world": event.world,
        "chat_id": event.chat,
        "kind": event.kind,
        "payload": event.model_dump(mode="json", by_alias=True),
        "created_at": ts(event.created_at),
        "message_id": None,
    }


# -- the store -------------------------------------------------------------------------------


class EventLog:
    """Reads of the event log, and appends of events that are not messages. Stateless: make one
    over any open ``SQLStorage``."""

    def __init__(self, storage: StorageCore) -> None:
        self._storage = storage

    @property
    def url(self) -> str:
        """The storage's database URL (the feeds listen for notifications on PostgreSQL)."""
        return self._storage.url

    async def append(self, events: Sequence[WorldEvent]) -> None:
        """Store events in the log, in order. Message events are stored by their publisher
        (``insert_messages``), never here; streaming chunks are live only (SPEC L3)."""
        rows = [
            event_row(e)
            for e in events
            if not isinstance(e, MessageEvent) and not (e.kind == "sse" and e.phase == "chunk")
        ]
        if not rows:
            return

        def insert(conn: Connection) -> None:
            insert_log_rows(conn, rows)

        await self._storage.in_transaction(insert, write=True)

    async def head(self, world: str) -> int:
        """The world's last ``seq`` (0 for an empty log)."""

        def read(conn: Connection) -> int:
            return int(conn.execute(_HEAD, {"world_key": world}).scalar() or 0)

        return await self._storage.in_transaction(read, write=False)

    async def after(
        self,
        world: str,
        after_seq: int,
        *,
        chat_id: str | None = None,
        limit: int = 500,
        or_gone: bool = False,
    ) -> LogBatch:
        """The world's events after ``after_seq`` (of one chat, if given), oldest first, at most
        ``limit`` rows. A message whose row is gone (its chat deleted meanwhile) is left out.
        ``or_gone``: when there are none, also tell whether the world is gone (same read)."""
        params: dict[str, Any] = {"world_key": world, "after_seq": after_seq, "row_limit": limit}
        query = _LOGGED
        if chat_id is not None:
            query, params["chat_key"] = _LOGGED_IN_CHAT, chat_id

        def read(conn: Connection) -> LogBatch:
            rows = conn.execute(query, params).all()
            last = int(rows[-1][0]) if rows else after_seq
            gone = or_gone and not rows and conn.execute(_WORLD_KEPT, params).first() is None
            return LogBatch(_logged(world, rows), last, full=len(rows) >= limit, world_gone=gone)

        return await self._storage.in_transaction(read, write=False)

    async def transcript_page(
        self, world: str, chat_id: str, *, after: int = 0, limit: int = 1000
    ) -> TranscriptPage:
        """Up to ``limit`` transcript messages of the chat after position ``after``, and the
        log's head, from one consistent read."""
        params = {"world_key": world, "chat_key": chat_id, "after_seq": after, "row_limit": limit}

        def read(conn: Connection) -> TranscriptPage:
            rows = conn.execute(TRANSCRIPT_PAGE, params).all()
            head = int(conn.execute(_HEAD, params).scalar() or 0)
            last = int(rows[-1].seq) if rows else after
            return TranscriptPage([row_message(r) for r in rows], last, head)

        return await self._storage.in_transaction(read, write=False)


def _logged(world: str, rows: Sequence[Sequence[Any]]) -> list[LoggedEvent]:
    found: list[LoggedEvent] = []
    last = 0
    for row in rows:
        seq, kind, chat_id, payload, message_id = row[:5]
        if seq == last:
            continue  # a transcript holding one message id twice: the first is the event
        last = seq
        if kind != "message":
            document = dict(payload)
            if kind == "sse" and isinstance(document.get("usage"), dict):
                document["usage"] = usage_json(document["usage"])  # one stored before both names
            found.append(LoggedEvent(int(seq), kind, chat_id, document))
            continue
        if row[5] is None:  # the message is gone
            continue
        message = row_message(row[5:])
        event = MessageEvent(
            world=world,
            message=message,
            event_id=f"evt_{message_id}",
            created_at=message.created_at,
            trace_id=payload.get("traceId") if isinstance(payload, dict) else None,
        )
        found.append(
            LoggedEvent(int(seq), "message", chat_id, event.model_dump(mode="json", by_alias=True))
        )
    return found
