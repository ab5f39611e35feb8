"""The statements a turn runs, written once with bind parameters, and the small steps shared by
the storage methods.

Every statement is SQL text (``statement.Sql``), portable to both databases, with the types of
its JSON values and columns: on SQLite it runs as written on the bare ``sqlite3`` connection
(``sqlite_direct``), so a command on SQLite never imports SQLAlchemy nor compiles a statement.
They are module constants: the hot paths pass only the values. Parameters that pick rows are named apart from the columns (``world_key``);
an INSERT's are its columns, so a row's dict is its values (``rows.message_row``).
"""

from __future__ import annotations

from typing import Any, Final

from agentworld.errors import NotFoundError
from agentworld.models import Agent, Message, World, utc_now
from agentworld.models.pending import PendingApproval, PendingQuestion
from agentworld.storage.connection import Connection, Row
from agentworld.storage.event_log import lock_world_log, message_log_rows
from agentworld.storage.pending_rows import find_calls
from agentworld.storage.rows import (
    CHAT_MESSAGES,
    MESSAGE_COLUMNS_SQL,
    row_agent,
    row_message,
    ts,
    world_record,
)
from agentworld.storage.statement import Sql

WORLD_COLUMNS: Final = "worlds.name, worlds.config, worlds.created_at, worlds.updated_at"
"""A world's columns, its settings as stored: ``rows.world_record`` validates a text it has
seen once only (asyncpg decodes it anyway, and then they are validated each time)."""
AGENT_COLUMNS: Final = (
    "agents.world, agents.name, agents.config, agents.llm_call_count, agents.last_active,"
    " agents.created_at"
)
"""An agent's columns, its settings as stored, for the same reason (``rows.row_agent``)."""

WORLD = Sql(f"SELECT {WORLD_COLUMNS} FROM worlds WHERE worlds.name = :world_key")
AGENTS_OF_WORLD = Sql(
    f"SELECT {AGENT_COLUMNS} FROM agents WHERE agents.world = :world_key"
    " ORDER BY agents.created_at, agents.name"
)
WORLD_WITH_AGENTS = Sql(
    "SELECT worlds.name AS world_name, worlds.config AS world_config,"
    " worlds.created_at AS world_created_at, worlds.updated_at AS world_updated_at,"
    f" {AGENT_COLUMNS}"
    " FROM worlds LEFT OUTER JOIN agents ON agents.world = worlds.name"
    " WHERE worlds.name = :world_key ORDER BY agents.created_at, agents.name"
)
"""The world and its agents in one statement: a row per agent (one with no agent when it
has none), the world's columns labelled ``world_*``, the agent's under their own names; both
settings as stored (decoded once per text, not once per agent row that repeats it)."""
AGENT = Sql(
    f"SELECT {AGENT_COLUMNS} FROM agents"
    " WHERE agents.world = :world_key AND agents.name = :agent_key"
)
AGENT_AND_CUTS = Sql(
    f"SELECT {AGENT_COLUMNS}, (SELECT chats.cuts FROM chats WHERE chats.world = :world_key"
    " AND chats.chat_id = :chat_key) AS chat_cuts FROM agents"
    " WHERE agents.world = :world_key AND agents.name = :agent_key"
)
"""``AGENT`` with the number of cuts made in the chat (``storage.cuts``): a memory kept from
an earlier read is still whole only while that number is the same."""
AGENT_NAMED = Sql(
    f"SELECT {AGENT_COLUMNS} FROM agents"
    " WHERE agents.world = :world_key AND lower(agents.name) = :agent_key"
)
"""An agent by name regardless of case (``agent_key`` lower-cased), as mentions find it."""
COUNT_LLM_CALLS = Sql(
    "UPDATE agents SET llm_call_count = llm_call_count + :calls, last_active = :now"
    " WHERE world = :world_key AND name = :agent_key"
)
RESET_LLM_CALLS = Sql(
    "UPDATE agents SET llm_call_count = 0 WHERE world = :world_key AND llm_call_count != 0"
)
CHAT_EXISTS = Sql(
    "SELECT chats.chat_id FROM chats WHERE chats.world = :world_key AND chats.chat_id = :chat_key"
)
CHAT_TITLED = Sql(
    "SELECT titled FROM chats WHERE world = :world_key AND chat_id = :chat_key",
    columns={"titled": "bool"},
)
_LOCK_CHATS = "SELECT chat_id FROM chats WHERE world = :world_key"
LOCK_CHATS_OF_WORLD = Sql(_LOCK_CHATS, postgresql=f"{_LOCK_CHATS} FOR UPDATE")
"""The world's chats, their rows locked on PostgreSQL (SQLite serialises writers anyway): a
message posted into a chat locks its row first, so it waits for a world's deletion."""
_CHATS_WITH_COUNTS = (
    "SELECT chats.world, chats.chat_id, chats.name, chats.titled, chats.created_at,"
    " chats.updated_at, chats.branch_of, chats.branch_message, (SELECT count(*) FROM messages WHERE messages.world = chats.world"
    " AND messages.chat_id = chats.chat_id AND messages.memory_owner IS NULL) AS message_count"
    " FROM chats WHERE chats.world = :world_key"
)
CHATS_OF_WORLD = Sql(f"{_CHATS_WITH_COUNTS} ORDER BY chats.created_at", columns={"titled": "bool"})
"""The world's chats, each with the number of messages in its transcript."""
CHAT = Sql(
    f"{_CHATS_WITH_COUNTS} AND chats.chat_id = :chat_key ORDER BY chats.created_at",
    columns={"titled": "bool"},
)
_IN_MEMORY = f"{CHAT_MESSAGES} AND messages.memory_owner = :agent_key"
MEMORY = Sql(f"{_IN_MEMORY} ORDER BY messages.seq")
MEMORY_TAIL = Sql(f"{_IN_MEMORY} ORDER BY messages.seq DESC LIMIT :window_size")
"""The latest ``window_size`` messages of the agent's memory of the chat, newest first: all a
fresh process reads for an agent with a memory window."""
TRANSCRIPT = Sql(f"{CHAT_MESSAGES} AND messages.memory_owner IS NULL ORDER BY messages.seq")
MEMORY_OF_EVERY_CHAT = Sql(
    f"SELECT {MESSAGE_COLUMNS_SQL} FROM messages"
    " WHERE messages.world = :world_key AND messages.memory_owner = :agent_key"
    " ORDER BY messages.seq"
)
MEMORY_SINCE = Sql(f"{_IN_MEMORY} AND messages.seq > :after_seq ORDER BY messages.seq")
TRANSCRIPT_SINCE = Sql(
    f"{CHAT_MESSAGES} AND messages.memory_owner IS NULL AND messages.seq > :after_seq"
    " ORDER BY messages.memory_owner, messages.seq"
)
"""``event_log.TRANSCRIPT_PAGE`` without its limit (ordered as it is for PostgreSQL's sake)."""
LAST_SEQ = Sql("SELECT max(seq) FROM messages")
_MESSAGE_NAMES = (
    "world", "chat_id", "memory_owner", "message_id", "role", "sender", "agent_id", "content",
    "tool_calls", "tool_call_id", "reply_to", "created_at", "input_tokens", "output_tokens",
    "model", "cost_usd",
)  # fmt: skip
"""A message row's columns (``rows.message_row``): all but ``seq``, which the database numbers."""
_MESSAGE_FIELDS = ", ".join(_MESSAGE_NAMES)
INSERT_MESSAGES = Sql(
    f"INSERT INTO messages ({_MESSAGE_FIELDS})"
    f" VALUES ({', '.join(f':{n}' for n in _MESSAGE_NAMES)})",
    json_params=("tool_calls",),
)
"""Message rows (``rows.message_row``), one or many."""
_INSERT_IF_CHAT = (
    f"INSERT INTO messages ({_MESSAGE_FIELDS}) SELECT {{values}} WHERE EXISTS"
    " (SELECT 1 FROM chats WHERE chats.world = :world AND chats.chat_id = :chat_id) RETURNING seq"
)
_PG_TYPES = {
    "content": "TEXT", "input_tokens": "INTEGER", "output_tokens": "INTEGER",
    "cost_usd": "DOUBLE PRECISION",
}  # fmt: skip
INSERT_INTO_CHAT = Sql(
    _INSERT_IF_CHAT.format(values=", ".join(f":{n}" for n in _MESSAGE_NAMES)),
    json_params=("tool_calls",),
    postgresql=_INSERT_IF_CHAT.format(
        values=", ".join(
            f":{n}" if n == "tool_calls" else f"CAST(:{n} AS {_PG_TYPES.get(n, 'VARCHAR')})"
            for n in _MESSAGE_NAMES
        )
    ),
)
"""One message row (given by column name), inserted only if its chat exists. PostgreSQL types
a parameter selected from no column as text, which its integer columns refuse and which is
at odds with the ``varchar`` the check compares it to: hence the casts there (the JSON one is
cast by its type)."""
INSERT_EVENTS = Sql(
    "INSERT INTO events (world, chat_id, kind, payload, created_at, message_id)"
    " VALUES (:world, :chat_id, :kind, :payload, :created_at, :message_id)",
    json_params=("payload",),
)
"""The log rows of transcript messages (``event_log.message_log_rows``), after the world's log
lock, which ordered reading needs on PostgreSQL."""


def require_world(conn: Connection, name: str) -> None:
    world_row(conn, name)


def world_row(conn: Connection, name: str) -> Row:
    """The world's row (``rows.row_world`` reads it), or ``NotFoundError``."""
    row = conn.execute(WORLD, {"world_key": name}).first()
    if row is None:
        raise NotFoundError(f"world {name!r} not found")
    return row


INSERT_CHAT = Sql(
    "INSERT INTO chats (world, chat_id, name, created_at, updated_at)"
    " VALUES (:world, :chat_id, :name, :created_at, :updated_at)"
)
"""A new chat (untitled: ``titled`` keeps its default)."""
INSERT_WORLD = Sql(
    "INSERT INTO worlds (name, config, created_at, updated_at)"
    " VALUES (:name, :config, :created_at, :updated_at)",
    json_params=("config",),
)
INSERT_AGENT = Sql(
    "INSERT INTO agents (world, name, config, llm_call_count, last_active, created_at)"
    " VALUES (:world, :name, :config, :llm_call_count, :last_active, :created_at)",
    json_params=("config",),
)
UPDATE_WORLD = Sql(
    "UPDATE worlds SET config = :new_config, updated_at = :new_updated_at WHERE name = :world_key",
    json_params=("new_config",),
)
_RENAME = (
    "UPDATE chats SET name = :new_name, titled = :new_titled, updated_at = :now"
    " WHERE world = :world_key AND chat_id = :chat_key"
)
RENAME_CHAT = Sql(_RENAME)
GIVE_TITLE = Sql(f"{_RENAME} AND titled = FALSE")
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


def since_with_waiting(
    conn: Connection, world: str, chat_id: str, after_seq: int
) -> tuple[list[Message], list[PendingApproval], list[PendingQuestion]]:
    """The chat's transcript after ``after_seq`` and the approval requests and questions still
    waiting in it (inside the caller's transaction): what a command produced in the chat."""
    params = {"world_key": world, "chat_key": chat_id, "after_seq": after_seq}
    messages = [row_message(r) for r in conn.execute(TRANSCRIPT_SINCE, params)]
    waiting = find_calls(conn, world, chat_id=chat_id)
    approvals = [c for c in waiting if isinstance(c, PendingApproval)]
    return messages, approvals, [c for c in waiting if isinstance(c, PendingQuestion)]


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
    same transaction (``storage/event_log.py``: one sequence over messages and events)."""
    if not rows:
        return
    logged = message_log_rows(rows)
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
    logged = message_log_rows([row])
    if logged:
        lock_world_log(conn, (row["world"],))
    seq = conn.execute(INSERT_INTO_CHAT, row).scalar()
    if seq is None:
        return None
    if logged:
        conn.execute(INSERT_EVENTS, logged)
    return int(seq)


def count_llm_calls(conn: Connection, world: str, agent: str, calls: int) -> None:
    conn.execute(
        COUNT_LLM_CALLS,
        {"world_key": world, "agent_key": agent, "calls": calls, "now": ts(utc_now())},
    )
