"""Table definitions, in portable SQLAlchemy Core (SQLite and PostgreSQL).

Worlds and agents keep their settings as one JSON document next to the few
columns that are queried or updated on their own (names, the LLM call count),
so adding a setting does not need a migration. Messages are one row per
message: the chat transcript has ``memory_owner`` NULL, each agent's memory has
its name there. Rows are only ever appended (SPEC §6: never rewrite a memory).
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()


def _sequence_key(name: str) -> sa.Column[int]:
    """A primary key the database numbers 1, 2, 3… in order of insertion, so rows can be read
    back in that order and "after number N". Every table with such a key makes it here, because
    the type is subtle: BIGINT on PostgreSQL, but exactly INTEGER on SQLite, where only an
    ``INTEGER PRIMARY KEY`` is the rowid that numbers itself."""
    return sa.Column(
        name,
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    )


schema_version = sa.Table(
    "schema_version",
    metadata,
    sa.Column("version", sa.Integer, nullable=False),
)

worlds = sa.Table(
    "worlds",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("updated_at", sa.String(40), nullable=False),
)

agents = sa.Table(
    "agents",
    metadata,
    sa.Column("world", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("llm_call_count", sa.Integer, nullable=False, server_default="0"),
    sa.Column("last_active", sa.String(40)),
    sa.Column("created_at", sa.String(40), nullable=False),
)

chats = sa.Table(
    "chats",
    metadata,
    sa.Column("world", sa.String(64), primary_key=True),
    sa.Column("chat_id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("titled", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("updated_at", sa.String(40), nullable=False),
)

messages = sa.Table(
    "messages",
    metadata,
    _sequence_key("seq"),
    sa.Column("world", sa.String(64), nullable=False),
    sa.Column("chat_id", sa.String(64), nullable=False),
    sa.Column("memory_owner", sa.String(64)),
    sa.Column("message_id", sa.String(64), nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("sender", sa.String(64), nullable=False),
    sa.Column("agent_id", sa.String(64)),
    sa.Column("content", sa.Text),
    sa.Column("tool_calls", sa.JSON),
    sa.Column("tool_call_id", sa.String(128)),
    sa.Column("reply_to", sa.String(64)),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("input_tokens", sa.Integer),
    sa.Column("output_tokens", sa.Integer),
    sa.Index("ix_messages_chat", "world", "chat_id", "memory_owner", "seq"),
    sa.Index("ix_messages_tool_call", "world", "tool_call_id"),
    sa.Index("ix_messages_id", "world", "message_id"),
)

events = sa.Table(
    "events",
    metadata,
    _sequence_key("seq"),
    sa.Column("world", sa.String(64), nullable=False),
    sa.Column("chat_id", sa.String(64)),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("message_id", sa.String(64)),
    sa.Index("ix_events_world", "world", "seq"),
    sqlite_autoincrement=True,
)
"""The world's event log, read by the HTTP event stream (``storage/event_log.py``): one row per
persisted event, ``seq`` its position. A transcript message has a row of kind ``message`` that
points at it (``message_id``; its ``payload`` is empty), written with the message, so one
sequence orders messages and every other event. ``seq`` is never reused, even after the rows
at the end are deleted (SQLite ``AUTOINCREMENT``; a PostgreSQL sequence never goes back): a
client resuming after seq N must not miss a later row that got N again."""

tool_logs = sa.Table(
    "tool_logs",
    metadata,
    _sequence_key("seq"),
    sa.Column("world", sa.String(64), nullable=False),
    sa.Column("chat_id", sa.String(64), nullable=False),
    sa.Column("agent", sa.String(64), nullable=False),
    sa.Column("tool_call_id", sa.String(128), nullable=False),
    sa.Column("tool_name", sa.String(200), nullable=False),
    sa.Column("input", sa.JSON),
    sa.Column("output", sa.JSON),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("started_at", sa.String(40), nullable=False),
    sa.Column("finished_at", sa.String(40)),
    sa.Column("duration_ms", sa.Float),
    sa.Column("runner", sa.String(128)),
    sa.Index("ix_tool_logs_call", "world", "tool_call_id"),
)
"""``runner`` is ``host:pid`` of the process that runs the tool, so a restart can tell a call
interrupted by a crash from one another process is running right now."""

pending_calls = sa.Table(
    "pending_calls",
    metadata,
    sa.Column("world", sa.String(64), primary_key=True),
    sa.Column("tool_call_id", sa.String(128), primary_key=True),
    sa.Column("chat_id", sa.String(64), nullable=False),
    sa.Column("agent", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("tool_name", sa.String(200), nullable=False),
    sa.Column("arguments", sa.Text, nullable=False),
    sa.Column("batch_id", sa.String(64), nullable=False),
    sa.Column("trigger_sender", sa.String(64), nullable=False),
    sa.Column("reply_to", sa.String(64)),
    sa.Column("detail", sa.JSON),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("answered_at", sa.String(40)),
    sa.Column("answer", sa.JSON),
    sa.Column("resumed_at", sa.String(40)),
    sa.Index("ix_pending_status", "world", "status", "chat_id"),
    sa.Index("ix_pending_batch", "world", "batch_id"),
)
"""Tool calls waiting for someone outside the loop: a client-side tool's result, or (later) a
person's approval. The messages in memory stay the source of truth for the model; this table
is the state machine of the wait, so "answered once" is one atomic UPDATE, across processes."""

approval_grants = sa.Table(
    "approval_grants",
    metadata,
    sa.Column("grant_id", sa.String(64), primary_key=True),
    sa.Column("world", sa.String(64), nullable=False),
    sa.Column("scope", sa.String(16), nullable=False),
    sa.Column("agent", sa.String(64)),
    sa.Column("chat_id", sa.String(64)),
    sa.Column("tool_name", sa.String(200), nullable=False),
    sa.Column("roots", sa.JSON),
    sa.Column("allow_redirection", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("approval_id", sa.String(128)),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("revoked_at", sa.String(40)),
    sa.Index("ix_grants_world", "world", "revoked_at"),
)
"""Remembered approvals: ``session`` (one agent in one chat) and ``always`` (the whole world)."""

audit_log = sa.Table(
    "audit_log",
    metadata,
    _sequence_key("seq"),
    sa.Column("world", sa.String(64), nullable=False),
    sa.Column("at", sa.String(40), nullable=False),
    sa.Column("event", sa.String(16), nullable=False),
    sa.Column("actor", sa.String(64), nullable=False),
    sa.Column("approval_id", sa.String(128)),
    sa.Column("agent", sa.String(64)),
    sa.Column("chat_id", sa.String(64)),
    sa.Column("tool_name", sa.String(200)),
    sa.Column("arguments", sa.JSON),
    sa.Column("decision", sa.String(16)),
    sa.Column("scope", sa.String(16)),
    sa.Column("latency_ms", sa.Float),
    sa.Column("detail", sa.JSON),
    sa.Index("ix_audit_world", "world", "seq"),
)
"""Every approval request and decision: who, when, which tool with which (redacted) arguments."""

chat_inbox = sa.Table(
    "chat_inbox",
    metadata,
    _sequence_key("item_id"),
    sa.Column("world", sa.String(64), nullable=False),
    sa.Column("chat_id", sa.String(64), nullable=False),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("work", sa.JSON, nullable=False),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Index("ix_inbox_chat", "world", "chat_id", "position", "item_id"),
)
"""Work a chat still has to do (``models.work``), in order of ``position`` then ``item_id``:
an item replaced by several continuations keeps its position, so they come before anything
queued after it. A row is deleted in the transaction of the step that finishes it."""

chat_leases = sa.Table(
    "chat_leases",
    metadata,
    sa.Column("world", sa.String(64), primary_key=True),
    sa.Column("chat_id", sa.String(64), primary_key=True),
    sa.Column("owner", sa.String(200), nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
)
"""Which process runs a chat's work right now: ``host:pid:start`` and when the claim lapses
unless renewed (seconds since the epoch). One row per chat being run; none when idle."""
