"""The statements a turn runs, built once with bind parameters, and the small steps shared by
the storage methods.

Building a SQLAlchemy statement and its cache key costs several times what executing it
does, so the hot paths reuse these objects and pass only the values. Parameter names
differ from column names, which UPDATE and INSERT reserve for their own values.

The statements every turn runs are SQL text (``sa.text``), portable to both databases, with
the types of their JSON values and columns: on SQLite they run as written, never compiled
(``sqlite_direct``), where compiling them as Core statements cost a fresh process's first
turn about 15 ms (issue 18). The rest stay Core statements.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from agentworld.errors import NotFoundError
from agentworld.models import Agent, Message, World, utc_now
from agentworld.models.pending import PendingApproval
from agentworld.models.work import ChatReport
from agentworld.storage import schema
from agentworld.storage.connection import Connection, Row
from agentworld.storage.event_log import lock_world_log, message_log_rows
from agentworld.storage.pending_rows import find_calls
from agentworld.storage.rows import (
    CHAT_MESSAGES,
    MESSAGE_COLUMNS,
    MESSAGE_COLUMNS_SQL,
    row_agent,
    row_message,
    ts,
    world_record,
)

_AGENTS = schema.agents
_CHATS = schema.chats
_MESSAGES = schema.messages
_WORLDS = schema.worlds
_bp = sa.bindparam

_AGENT_COLUMNS = tuple(
    sa.type_coerce(column, sa.Text).label("config") if column.name == "config" else column
    for column in _AGENTS.c
)
"""An agent's columns with its settings as stored: ``rows.row_agent`` validates a text it has
seen once only (asyncpg decodes it anyway, and then they are validated each time)."""

WORLD = sa.select(_WORLDS).where(_WORLDS.c.name == _bp("world_key"))
AGENTS_OF_WORLD = (
    sa.select(*_AGENT_COLUMNS)
    .where(_AGENTS.c.world == _bp("world_key"))
    .order_by(_AGENTS.c.created_at, _AGENTS.c.name)
)
_AGENT_COLUMNS_SQL = ", ".join(f"agents.{column.name}" for column in _AGENTS.c)
WORLD_WITH_AGENTS = sa.text(
    "SELECT worlds.name AS world_name, worlds.config AS world_config,"
    " worlds.created_at AS world_created_at, worlds.updated_at AS world_updated_at,"
    f" {_AGENT_COLUMNS_SQL}"
    " FROM worlds LEFT OUTER JOIN agents ON agents.world = worlds.name"
    " WHERE worlds.name = :world_key ORDER BY agents.created_at, agents.name"
)
"""The world and its agents in one statement: a row per agent (one with no agent when it
has none), the world's columns labelled ``world_*``, the agent's under their own names; both
settings as stored (decoded once per text, not once per agent row that repeats it)."""
AGENT = sa.select(*_AGENT_COLUMNS).where(
    _AGENTS.c.world == _bp("world_key"), _AGENTS.c.name == _bp("agent_key")
)
AGENT_NAMED = sa.select(*_AGENT_COLUMNS).where(
    _AGENTS.c.world == _bp("world_key"), sa.func.lower(_AGENTS.c.name) == _bp("agent_key")
)
"""An agent by name regardless of case (``agent_key`` lower-cased), as mentions find it."""
COUNT_LLM_CALLS = sa.text(
    "UPDATE agents SET llm_call_count = llm_call_count + :calls, last_active = :now"
    " WHERE world = :world_key AND name = :agent_key"
)
RESET_LLM_CALLS = sa.text(
    "UPDATE agents SET llm_call_count = 0 WHERE world = :world_key AND llm_call_count != 0"
)
CHAT_EXISTS = sa.select(_CHATS.c.chat_id).where(
    _CHATS.c.world == _bp("world_key"), _CHATS.c.chat_id == _bp("chat_key")
)
CHAT_TITLED = sa.text(
    "SELECT titled FROM chats WHERE world = :world_key AND chat_id = :chat_key"
).columns(titled=sa.Boolean)
CHAT_MESSAGE_COUNT = (
    sa.select(sa.func.count())
    .where(
        _MESSAGES.c.world == _CHATS.c.world,
        _MESSAGES.c.chat_id == _CHATS.c.chat_id,
        _MESSAGES.c.memory_owner.is_(None),
    )
    .scalar_subquery()
)
LOCK_CHATS_OF_WORLD = sa.select(_CHATS.c.chat_id).where(_CHATS.c.world == _bp("world_key")).with_for_update()
"""The world's chats, their rows locked on PostgreSQL (SQLite serialises writers anyway): a
message posted into a chat locks its row first, so it waits for a world's deletion."""
CHATS_OF_WORLD = (
    sa.select(_CHATS, CHAT_MESSAGE_COUNT.label("message_count"))
    .where(_CHATS.c.world == _bp("world_key"))
    .order_by(_CHATS.c.created_at)
)
CHAT = CHATS_OF_WORLD.where(_CHATS.c.chat_id == _bp("chat_key"))
MEMORY = CHAT_MESSAGES.where(_MESSAGES.c.memory_owner == _bp("agent_key")).order_by(_MESSAGES.c.seq)
_IN_MEMORY = (
    f"SELECT {MESSAGE_COLUMNS_SQL} FROM messages WHERE messages.world = :world_key"
    " AND messages.chat_id = :chat_key AND messages.memory_owner = :agent_key"
)
MEMORY_TAIL = sa.text(f"{_IN_MEMORY} ORDER BY messages.seq DESC LIMIT :window_size")
"""The latest ``window_size`` messages of the agent's memory of the chat, newest first: all a
fresh process reads for an agent with a memory window."""
TRANSCRIPT = CHAT_MESSAGES.where(_MESSAGES.c.memory_owner.is_(None)).order_by(_MESSAGES.c.seq)
MEMORY_OF_EVERY_CHAT = (
    sa.select(*MESSAGE_COLUMNS, _MESSAGES.c.seq)
    .where(_MESSAGES.c.world == _bp("world_key"), _MESSAGES.c.memory_owner == _bp("agent_key"))
    .order_by(_MESSAGES.c.seq)
)
MEMORY_SINCE = sa.text(f"{_IN_MEMORY} AND messages.seq > :after_seq ORDER BY messages.seq")
TRANSCRIPT_SINCE = sa.text(
    f"SELECT {MESSAGE_COLUMNS_SQL} FROM messages WHERE messages.world = :world_key"
    " AND messages.chat_id = :chat_key AND messages.memory_owner IS NULL"
    " AND messages.seq > :after_seq ORDER BY messages.memory_owner, messages.seq"
)
"""``event_log.TRANSCRIPT_PAGE`` without its limit (ordered as it is for PostgreSQL's sake)."""
LAST_SEQ = sa.select(sa.func.max(_MESSAGES.c.seq))
_MESSAGE_FIELDS = [c.name for c in _MESSAGES.c if c.name != "seq"]
_MESSAGE_VALUES = ", ".join(f":{name}" for name in _MESSAGE_FIELDS)
INSERT_MESSAGES = sa.text(
    f"INSERT INTO messages ({', '.join(_MESSAGE_FIELDS)}) VALUES ({_MESSAGE_VALUES})"
).bindparams(_bp("tool_calls", type_=_MESSAGES.c.tool_calls.type))
"""Message rows (``rows.message_row``), one or many."""
INSERT_INTO_CHAT = sa.text(
    f"INSERT INTO messages ({', '.join(_MESSAGE_FIELDS)}) SELECT {_MESSAGE_VALUES}"
    " WHERE EXISTS (SELECT 1 FROM chats WHERE chats.world = :world AND chats.chat_id = :chat_id)"
    " RETURNING seq"
).bindparams(*(_bp(name, type_=_MESSAGES.c[name].type) for name in _MESSAGE_FIELDS))
"""One message row (given by column name), inserted only if its chat exists."""
INSERT_EVENTS = sa.insert(schema.events)
"""For callers that store events themselves; ``event_log.insert_log_rows`` also takes the
world's log lock on PostgreSQL, which ordered reading needs."""


def require_world(conn: Connection, name: str) -> None:
    world_row(conn, name)


def world_row(conn: Connection, name: str) -> Row:
    """The world's row (``rows.row_world`` reads it), or ``NotFoundError``."""
    row = conn.execute(WORLD, {"world_key": name}).first()
    if row is None:
        raise NotFoundError(f"world {name!r} not found")
    return row


INSERT_CHAT = sa.insert(_CHATS)
INSERT_WORLD = sa.insert(_WORLDS)
INSERT_AGENT = sa.insert(_AGENTS)
INSERT_AUDIT = sa.insert(schema.audit_log)
UPDATE_WORLD = (
    sa.update(_WORLDS)
    .where(_WORLDS.c.name == _bp("world_key"))
    .values(
        config=_bp("new_config", type_=_WORLDS.c.config.type),
        updated_at=_bp("new_updated_at", type_=_WORLDS.c.updated_at.type),
    )
)
"""Built once, as every statement a command may run often is: a statement built per call is
compiled per call (``sqlite_direct``), which costs more than running it."""

RENAME_CHAT = (
    sa.update(_CHATS)
    .where(_CHATS.c.world == _bp("world_key"), _CHATS.c.chat_id == _bp("chat_key"))
    .values(name=_bp("new_name"), titled=_bp("new_titled"), updated_at=_bp("now"))
)


GIVE_TITLE = RENAME_CHAT.where(_CHATS.c.titled.is_(False))
"""A generated title: never over a name given meanwhile (a person's rename marks it titled)."""


def rename_chat(conn: Connection, world: str, chat_id: str, name: str, *, titled: bool) -> None:
    """Give the chat ``name`` (``titled``: as its title), inside the caller's transaction."""
    params = {"world_key": world, "chat_key": chat_id, "new_name": name, "new_titled": titled}
    conn.execute(RENAME_CHAT, {**params, "now": ts(utc_now())})


def give_title(conn: Connection, world: str, chat_id: str, title: str) -> None:
    """Name the chat with its generated ``title`` unless it has a title or a name of one's own
    already (inside the caller's transaction)."""
    params = {"world_key": world, "chat_key": chat_id, "new_name": title, "new_titled": True}
    conn.execute(GIVE_TITLE, {**params, "now": ts(utc_now())})


def untitled(conn: Connection, world: str, chat_id: str) -> tuple[list[Message], list[Agent]] | None:
    """What naming a chat needs -- its transcript and the world's agents -- or None once it
    has its title (inside the caller's transaction)."""
    params = {"world_key": world, "chat_key": chat_id}
    if conn.execute(CHAT_TITLED, params).scalar():
        return None
    transcript = [row_message(r) for r in conn.execute(TRANSCRIPT, params).all()]
    return transcript, [row_agent(r) for r in conn.execute(AGENTS_OF_WORLD, params).all()]


_APPROVALS_WAITING = sa.text(
    "SELECT EXISTS (SELECT 1 FROM pending_calls WHERE world = :world_key"
    " AND chat_id = :chat_key AND kind = 'approval' AND status = 'pending')"
)
"""Asked before the approvals themselves are read, at the end of every command's turn: nearly
always "none", and this costs a fresh process no compiling (the full read, about 3 ms)."""


def since_with_approvals(
    conn: Connection, world: str, chat_id: str, after_seq: int
) -> tuple[list[Message], list[PendingApproval]]:
    """The chat's transcript after ``after_seq`` and the approvals still waiting in it (inside
    the caller's transaction): what a command produced in the chat."""
    params = {"world_key": world, "chat_key": chat_id, "after_seq": after_seq}
    messages = [row_message(r) for r in conn.execute(TRANSCRIPT_SINCE, params)]
    waiting = []
    if conn.execute(_APPROVALS_WAITING, params).scalar():
        waiting = find_calls(conn, world, chat_id=chat_id, kind="approval")
    return messages, [c for c in waiting if isinstance(c, PendingApproval)]


def chat_report(
    conn: Connection, world: str, chat_id: str, after_seq: int, writes: int
) -> ChatReport:
    """``since_with_approvals`` as a ``ChatReport`` (``writes``: the store's count now)."""
    return ChatReport(*since_with_approvals(conn, world, chat_id, after_seq), after_seq, writes)


def world_and_agents(conn: Connection, name: str) -> tuple[World, list[Agent]]:
    """The world's settings and its agents, inside the caller's transaction (one statement:
    a turn's post reads them)."""
    rows = conn.execute(WORLD_WITH_AGENTS, {"world_key": name}).all()
    if not rows:
        raise NotFoundError(f"world {name!r} not found")
    first = rows[0]
    world = world_record(  # the config as stored (asyncpg: decoded already)
        first.world_name, first.world_config, first.world_created_at, first.world_updated_at
    )
    return world, [row_agent(r) for r in rows if r.name is not None]


def insert_messages(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Store ``messages`` rows; each transcript message also gets its event-log row, in the
    same transaction (``storage/event_log.py``: one sequence over messages and events) -- on
    SQLite by the insert's own trigger (``schema.MESSAGE_LOG_TRIGGER``)."""
    if not rows:
        return
    logged = [] if _logged_by_trigger(conn) else message_log_rows(rows)
    if logged:
        # Before the messages too, so transcript positions (``messages.seq``) of a world also
        # become visible in order: a transcript page read ``after`` one never skips a message.
        lock_world_log(conn, (row["world"] for row in logged))
    conn.execute(INSERT_MESSAGES, rows)
    if logged:
        conn.execute(INSERT_EVENTS, logged)


def insert_into_chat(conn: Connection, row: dict[str, Any]) -> int | None:
    """Store one ``messages`` row (with its event-log row, as ``insert_messages``) if its chat
    exists, and return its position (``seq``); None, storing nothing, when there is no such
    chat. The check is the insert's own: one statement."""
    logged = [] if _logged_by_trigger(conn) else message_log_rows([row])
    if logged:
        lock_world_log(conn, (row["world"],))
    seq = conn.execute(INSERT_INTO_CHAT, row).scalar()
    if seq is None:
        return None
    if logged:
        conn.execute(INSERT_EVENTS, logged)
    return int(seq)


def _logged_by_trigger(conn: Connection) -> bool:
    """SQLite logs a transcript message by a trigger on its insert (one statement less each);
    PostgreSQL by an insert of its own, after the world's log lock (``event_log``)."""
    return conn.dialect.name == "sqlite"


def count_llm_calls(conn: Connection, world: str, agent: str, calls: int) -> None:
    conn.execute(
        COUNT_LLM_CALLS,
        {"world_key": world, "agent_key": agent, "calls": calls, "now": ts(utc_now())},
    )
