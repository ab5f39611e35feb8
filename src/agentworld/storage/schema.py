"""Table definitions, in portable SQLAlchemy Core (SQLite and PostgreSQL).

Worlds and agents keep their settings as one JSON document next to the few
columns that are queried or updated on their own (names, the LLM call count),
so adding a setting does not need a migration. Messages are one row per
message: the chat transcript has ``memory_owner`` NULL, each agent's memory has
its name there. Rows are only ever appended (SPEC §6: never rewrite a memory), but for a
person's edit or delete onward, which removes a chat's rows from a message on (``cuts``).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.schema import SchemaItem

metadata = sa.MetaData()


def _numbered(name: str, *items: SchemaItem, key: str = "seq", **options: Any) -> sa.Table:
    """A table whose first column ``key`` is a primary key the database numbers 1, 2, 3… in
    order of insertion, so rows can be read back in that order and "after number N". Every
    table with such a key is made here, because the type is subtle: BIGINT on PostgreSQL, but
    exactly INTEGER on SQLite, where only an ``INTEGER PRIMARY KEY`` is the rowid that numbers
    itself."""
    sequence = sa.Column(
        key,
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    )
    return sa.Table(name, metadata, sequence, *items, **options)


def _name(name: str, *, key: bool = False, nullable: bool = False) -> sa.Column[str]:
    """A name or id of ours: a world, agent or chat, a message, a batch, a grant, an actor.
    One width everywhere, so a name fits every table that refers to it."""
    return sa.Column(name, sa.String(64), primary_key=key, nullable=nullable)


def _call_id(name: str, *, key: bool = False, nullable: bool = False) -> sa.Column[str]:
    """A tool call's id as the model gave it (an approval is known by its call's id): ids
    from providers run longer than ours."""
    return sa.Column(name, sa.String(128), primary_key=key, nullable=nullable)


def _tool_name(*, nullable: bool = False) -> sa.Column[str]:
    """The name of the tool called, MCP server prefix included."""
    return sa.Column("tool_name", sa.String(200), nullable=nullable)


def _code(name: str, *, nullable: bool = False) -> sa.Column[str]:
    """One value of a closed set (a ``Literal`` of the models: a kind, a status, a role)."""
    return sa.Column(name, sa.String(16), nullable=nullable)


def _time(name: str, *, nullable: bool = False) -> sa.Column[str]:
    """A moment as ISO 8601 text in UTC (``datetime.isoformat``): the same on both databases,
    and ordered as text the way it is in time."""
    return sa.Column(name, sa.String(40), nullable=nullable)


def _chat_of_world(*, key: bool = False, world_wide: bool = False) -> tuple[sa.Column[str], ...]:
    """``world`` and ``chat_id``: the chat a row belongs to (with ``world_wide``, a row may
    belong to the world as a whole, in no chat). Deleting a chat deletes its rows from every
    table with both columns (``CatalogStore.delete_chat``), so a table of a chat's rows takes
    the pair from here."""
    return _name("world", key=key), _name("chat_id", key=key, nullable=world_wide)


schema_version = sa.Table(
    "schema_version",
    metadata,
    sa.Column("version", sa.Integer, nullable=False),
)

worlds = sa.Table(
    "worlds",
    metadata,
    _name("name", key=True),
    sa.Column("config", sa.JSON, nullable=False),
    _time("created_at"),
    _time("updated_at"),
)

agents = sa.Table(
    "agents",
    metadata,
    _name("world", key=True),
    _name("name", key=True),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("llm_call_count", sa.Integer, nullable=False, server_default="0"),
    _time("last_active", nullable=True),
    _time("created_at"),
)

chats = sa.Table(
    "chats",
    metadata,
    *_chat_of_world(key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("titled", sa.Boolean, nullable=False, server_default=sa.false()),
    _time("created_at"),
    _time("updated_at"),
    _name("branch_of", nullable=True),
    _name("branch_message", nullable=True),
    sa.Column("cuts", sa.Integer, nullable=False, server_default="0"),
)
"""``branch_of`` / ``branch_message``: the chat and message a branch was made from (SPEC K1),
NULL for a chat that is no branch. ``cuts`` counts the times messages were removed from the
chat (an edit or delete onward, SPEC K2): a process that keeps a memory read earlier reads it
afresh when the count has changed."""

_HAS_CALL_ID = sa.text("tool_call_id IS NOT NULL")
"""Only tool results carry a call id: indexing the other messages (most of them) under NULL
cost every message an index entry, and a write a page, for lookups that never want them."""

messages = _numbered(
    "messages",
    *_chat_of_world(),
    _name("memory_owner", nullable=True),
    _name("message_id"),
    _code("role"),
    _name("sender"),
    _name("agent_id", nullable=True),
    sa.Column("content", sa.Text),
    sa.Column("tool_calls", sa.JSON),
    _call_id("tool_call_id", nullable=True),
    _name("reply_to", nullable=True),
    _time("created_at"),
    sa.Column("input_tokens", sa.Integer),
    sa.Column("output_tokens", sa.Integer),
    sa.Column("model", sa.String(256)),
    sa.Column("cost_usd", sa.Float),
    sa.Index("ix_messages_chat", "world", "chat_id", "memory_owner", "seq"),
    sa.Index(
        "ix_messages_tool_call", "world", "tool_call_id",
        sqlite_where=_HAS_CALL_ID, postgresql_where=_HAS_CALL_ID,
    ),  # fmt: skip
    sa.Index("ix_messages_id", "world", "message_id"),
    sqlite_autoincrement=True,
)
"""Memories and transcripts: one row per message per holder (``memory_owner`` NULL for the
transcript). ``seq`` is never reused, even after the newest rows are removed (a cut, SPEC K2;
SQLite ``AUTOINCREMENT``): a reader that resumes after seq N must not miss a later message
that got N again."""

events = _numbered(
    "events",
    *_chat_of_world(world_wide=True),
    _code("kind"),
    sa.Column("payload", sa.JSON, nullable=False),
    _time("created_at"),
    _name("message_id", nullable=True),
    sa.Index("ix_events_world", "world", "seq"),
    sqlite_autoincrement=True,
)
"""The world's event log, read by the HTTP event stream (``storage/event_log.py``): one row per
persisted event, ``seq`` its position. A transcript message has a row of kind ``message`` that
points at it (``message_id``; its ``payload`` is empty), written with the message, so one
sequence orders messages and every other event. ``seq`` is never reused, even after the rows
at the end are deleted (SQLite ``AUTOINCREMENT``; a PostgreSQL sequence never goes back): a
client resuming after seq N must not miss a later row that got N again."""

tool_logs = _numbered(
    "tool_logs",
    *_chat_of_world(),
    _name("agent"),
    _call_id("tool_call_id"),
    _tool_name(),
    sa.Column("input", sa.JSON),
    sa.Column("output", sa.JSON),
    _code("status"),
    _time("started_at"),
    _time("finished_at", nullable=True),
    sa.Column("duration_ms", sa.Float),
    sa.Column("runner", sa.String(128)),
    sa.Index("ix_tool_logs_call", "world", "tool_call_id"),
)
"""``runner`` is ``host:pid`` of the process that runs the tool, so a restart can tell a call
interrupted by a crash from one another process is running right now."""

pending_calls = sa.Table(
    "pending_calls",
    metadata,
    _name("world", key=True),
    _call_id("tool_call_id", key=True),
    _name("chat_id"),
    _name("agent"),
    _code("kind"),
    _tool_name(),
    sa.Column("arguments", sa.Text, nullable=False),
    _name("batch_id"),
    _name("trigger_sender"),
    _name("reply_to", nullable=True),
    sa.Column("detail", sa.JSON),
    _code("status"),
    _time("created_at"),
    _time("answered_at", nullable=True),
    sa.Column("answer", sa.JSON),
    _time("resumed_at", nullable=True),
    sa.Index("ix_pending_status", "world", "status", "chat_id"),
    sa.Index("ix_pending_batch", "world", "batch_id"),
)
"""Tool calls waiting for someone outside the loop: a client-side tool's result, or (later) a
person's approval. The messages in memory stay the source of truth for the model; this table
is the state machine of the wait, so "answered once" is one atomic UPDATE, across processes."""

approval_grants = sa.Table(
    "approval_grants",
    metadata,
    _name("grant_id", key=True),
    _name("world"),
    _code("scope"),
    _name("agent", nullable=True),
    _name("chat_id", nullable=True),
    _tool_name(),
    sa.Column("roots", sa.JSON),
    sa.Column("allow_redirection", sa.Boolean, nullable=False, server_default=sa.false()),
    _call_id("approval_id", nullable=True),
    _time("created_at"),
    _time("revoked_at", nullable=True),
    sa.Column("redirect_targets", sa.JSON),
    sa.Index("ix_grants_world", "world", "revoked_at"),
)
"""Remembered approvals: ``session`` (one agent in one chat) and ``always`` (the whole world);
for a shell line that writes files, the files it was approved to write (``redirect_targets``)."""

audit_log = _numbered(
    "audit_log",
    _name("world"),
    _time("at"),
    _code("event"),
    _name("actor"),
    _call_id("approval_id", nullable=True),
    _name("agent", nullable=True),
    _name("chat_id", nullable=True),
    _tool_name(nullable=True),
    sa.Column("arguments", sa.JSON),
    _code("decision", nullable=True),
    _code("scope", nullable=True),
    sa.Column("latency_ms", sa.Float),
    sa.Column("detail", sa.JSON),
    sa.Index("ix_audit_world", "world", "seq"),
)
"""Every approval request and decision: who, when, which tool with which (redacted) arguments."""

chat_inbox = _numbered(
    "chat_inbox",
    *_chat_of_world(),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("work", sa.JSON, nullable=False),
    _time("created_at"),
    sa.Index("ix_inbox_chat", "world", "chat_id", "position", "item_id"),
    key="item_id",
)
"""Work a chat still has to do (``models.work``), in order of ``position`` then ``item_id``:
an item replaced by several continuations keeps its position, so they come before anything
queued after it. A row is deleted in the transaction of the step that finishes it."""

chat_leases = sa.Table(
    "chat_leases",
    metadata,
    *_chat_of_world(key=True),
    sa.Column("owner", sa.String(200), nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sqlite_with_rowid=False,
)
"""Which process runs a chat's work right now: ``host:pid:start`` and when the claim lapses
unless renewed (seconds since the epoch). One row per chat being run; none when idle. On
SQLite the rows live in their key's own tree (``WITHOUT ROWID``): a turn claims and lets go
of its chat, and each then writes one page, not the table's and its key index's."""
