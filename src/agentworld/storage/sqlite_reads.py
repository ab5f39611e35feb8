"""A chat's transcript and an agent's memory read on a bare ``sqlite3`` connection.

``agentworld messages`` is run hundreds of times a day, by people and by scripts. The full
path imports typer, pydantic and the runtime and opens the world before it reads a row; this
module needs none of them. Its statements are the
text of the statements the stores run for the same reads (``storage.queries``), and a test
holds each one to that statement's text, so the two cannot drift apart.

It only ever reads, and only from a database this version made and finished upgrading: it
never creates a file, never migrates, and leaves anything it cannot vouch for (no file,
another schema version, a row in a shape it does not know) to the full path, by returning
None or raising ``Unreadable``.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentworld.approval.shell_view import ShellView
from agentworld.storage.versions import SCHEMA_VERSION

_MESSAGE_COLUMNS = (
    "messages.message_id, messages.chat_id, messages.role, messages.sender, messages.agent_id, "
    "messages.content, messages.tool_calls, messages.tool_call_id, "
    "messages.reply_to, messages.created_at, messages.input_tokens, messages.output_tokens, "
    "messages.seq"
)

VERSION = "SELECT max(schema_version.version) AS max_1 FROM schema_version"
WORLD = (
    "SELECT worlds.name, worlds.config, worlds.created_at, worlds.updated_at "
    "FROM worlds WHERE worlds.name = :world_key"
)
ALL_WORLDS = (
    "SELECT worlds.name, worlds.config, worlds.created_at, worlds.updated_at "
    "FROM worlds ORDER BY worlds.name"
)
CHAT_EXISTS = (
    "SELECT chats.chat_id FROM chats "
    "WHERE chats.world = :world_key AND chats.chat_id = :chat_key"
)
AGENT_NAMED = (
    "SELECT agents.world, agents.name, agents.config, agents.llm_call_count, "
    "agents.last_active, agents.created_at FROM agents "
    "WHERE agents.world = :world_key AND lower(agents.name) = :agent_key"
)
TRANSCRIPT = (
    f"SELECT {_MESSAGE_COLUMNS} FROM messages "
    "WHERE messages.world = :world_key AND messages.chat_id = :chat_key "
    "AND messages.memory_owner IS NULL ORDER BY messages.seq"
)
MEMORY = (
    f"SELECT {_MESSAGE_COLUMNS} FROM messages "
    "WHERE messages.world = :world_key AND messages.chat_id = :chat_key "
    "AND messages.memory_owner = :agent_key ORDER BY messages.seq"
)
MEMORY_OF_EVERY_CHAT = (
    f"SELECT {_MESSAGE_COLUMNS} FROM messages "
    "WHERE messages.world = :world_key AND messages.memory_owner = :agent_key "
    "ORDER BY messages.seq"
)

RUNNING_TOOLS = (
    "SELECT tool_logs.seq, tool_logs.world, tool_logs.chat_id, tool_logs.agent, "
    "tool_logs.tool_call_id, tool_logs.tool_name, tool_logs.input, tool_logs.output, "
    "tool_logs.status, tool_logs.started_at, tool_logs.finished_at, tool_logs.duration_ms, "
    "tool_logs.runner FROM tool_logs "
    "WHERE tool_logs.world = :world_key AND tool_logs.status = :status_key ORDER BY tool_logs.seq"
)
CHATS_WITH_WORK = (
    "SELECT chat_inbox.chat_id FROM chat_inbox WHERE chat_inbox.world = :world_key "
    "GROUP BY chat_inbox.chat_id ORDER BY min(chat_inbox.item_id)"
)
PENDING_CALLS = (
    "SELECT pending_calls.world, pending_calls.tool_call_id, pending_calls.chat_id, "
    "pending_calls.agent, pending_calls.kind, pending_calls.tool_name, pending_calls.arguments, "
    "pending_calls.batch_id, pending_calls.trigger_sender, pending_calls.reply_to, "
    "pending_calls.detail, pending_calls.status, pending_calls.created_at, "
    "pending_calls.answered_at, pending_calls.answer, pending_calls.resumed_at FROM pending_calls "
    "WHERE pending_calls.world = :world_key AND pending_calls.kind = :kind_key "
    "AND pending_calls.status = :status_key "
    "ORDER BY pending_calls.created_at, pending_calls.tool_call_id"
)

_ROLES = frozenset({"user", "assistant", "tool", "system"})


class Unreadable(Exception):
    """Something this reader cannot vouch for reading exactly as the full path does."""


@dataclass(frozen=True, slots=True)
class StoredFunction:
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class StoredToolCall:
    id: str
    function: StoredFunction


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A stored message as the CLI shows it: the fields ``cli.output.message_lines`` reads,
    and ``to_json``, which gives exactly ``Message.to_json()`` of the same row."""

    message_id: str
    chat_id: str
    role: str
    sender: str
    agent_id: str | None
    content: str | None
    tool_calls: tuple[StoredToolCall, ...] | None
    tool_call_id: str | None
    reply_to_message_id: str | None
    created_at: str
    """Already in the document's form: ISO 8601 in UTC ending in ``Z``."""

    def to_json(self) -> dict[str, Any]:
        calls = None
        if self.tool_calls is not None:
            calls = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
                for call in self.tool_calls
            ]
        return {
            "messageId": self.message_id,
            "chatId": self.chat_id,
            "role": self.role,
            "sender": self.sender,
            "agentId": self.agent_id,
            "content": self.content,
            "tool_calls": calls,
            "tool_call_id": self.tool_call_id,
            "replyToMessageId": self.reply_to_message_id,
            "createdAt": self.created_at,
        }


@dataclass(frozen=True, slots=True)
class StoredSandbox:
    """Where an approved call runs, as its request showed it: ``models.pending.SandboxDisplay``
    without pydantic (this module reads without it)."""

    active: bool
    writable: tuple[str, ...]
    network: str
    summary: str

    def to_json(self) -> dict[str, Any]:
        return {"active": self.active, "writable": list(self.writable), "network": self.network}


UNRECORDED_SANDBOX = StoredSandbox(
    False, (), "allow", "containment not recorded for this request: assume it runs NOT sandboxed"
)
"""``models.pending.UNRECORDED_SANDBOX``, for a request stored before containment was recorded."""


@dataclass(frozen=True, slots=True)
class StoredApproval:
    """A pending approval request with the fields its document and its text show
    (``documents.approval_doc``, ``cli.output.print_approvals``)."""

    world: str
    tool_call_id: str
    chat_id: str
    agent: str
    tool_name: str
    tool_args: dict[str, Any]
    message: str
    shell: ShellView | None
    sandbox: StoredSandbox
    created_at: datetime


def open_current(path: Path) -> sqlite3.Connection | None:
    """A connection to the database at ``path`` if it exists and is at ``SCHEMA_VERSION``;
    None otherwise (the full path then creates, upgrades or refuses it)."""
    if not path.is_file():
        return None
    try:
        # mode=rw: never create the file; what runs on the connection only reads.
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=5.0)
    except sqlite3.Error:
        return None
    try:
        (version,) = conn.execute(VERSION).fetchone()
    except (sqlite3.Error, ValueError):  # not a database, not ours, or damaged (bad text)
        conn.close()
        return None
    if version != SCHEMA_VERSION:
        conn.close()
        return None
    return conn


def world_named(conn: sqlite3.Connection, name: str) -> tuple[str, dict[str, Any]] | None:
    """The stored spelling and settings of the world ``name`` names regardless of case (as
    the CLI finds worlds), or None when there is none."""
    names = [row[0] for row in conn.execute(ALL_WORLDS)]
    if name not in names:
        name = next((stored for stored in names if stored.lower() == name.lower()), name)
    row = conn.execute(WORLD, {"world_key": name}).fetchone()
    if row is None:
        return None
    config = json.loads(row[1])
    if not isinstance(config, dict):
        raise Unreadable("world settings")
    return row[0], config


def chat_exists(conn: sqlite3.Connection, world: str, chat_id: str) -> bool:
    return conn.execute(CHAT_EXISTS, {"world_key": world, "chat_key": chat_id}).fetchone() is not None


def agent_named(conn: sqlite3.Connection, world: str, name: str) -> str | None:
    """The stored name of the world's agent ``name`` names; matched by the same SQL as the
    full path (``lower()``, ASCII in SQLite)."""
    row = conn.execute(AGENT_NAMED, {"world_key": world, "agent_key": name.lower()}).fetchone()
    return None if row is None else str(row[1])


def transcript(conn: sqlite3.Connection, world: str, chat_id: str) -> list[StoredMessage]:
    rows = conn.execute(TRANSCRIPT, {"world_key": world, "chat_key": chat_id})
    return [stored_message(row) for row in rows]


def memory(
    conn: sqlite3.Connection, world: str, agent: str, chat_id: str | None
) -> list[StoredMessage]:
    """The agent's memory of one chat, or of every chat in order."""
    if chat_id is None:
        rows = conn.execute(MEMORY_OF_EVERY_CHAT, {"world_key": world, "agent_key": agent})
    else:
        rows = conn.execute(MEMORY, {"world_key": world, "chat_key": chat_id, "agent_key": agent})
    return [stored_message(row) for row in rows]


def stored_message(row: tuple[Any, ...]) -> StoredMessage:
    """A message from a row of ``TRANSCRIPT`` or ``MEMORY``, read as ``rows.row_message``
    and ``Message`` read it; ``Unreadable`` for anything they would read differently or
    refuse (a type they would coerce, a call list of another shape, a time not in UTC)."""
    (message_id, chat_id, role, sender, agent_id, content, calls, call_id, reply_to, created, *_) = row
    texts = (message_id, chat_id, role, sender, created)
    if not all(isinstance(value, str) for value in texts) or role not in _ROLES:
        raise Unreadable("message columns")
    if not all(value is None or isinstance(value, str) for value in (agent_id, content, call_id, reply_to)):
        raise Unreadable("message columns")
    # The row's columns come in the order of the dataclass's fields.
    calls_read, created_read = _tool_calls(calls), _utc_text(created)
    return StoredMessage(
        message_id, chat_id, role, sender, agent_id, content, calls_read, call_id, reply_to, created_read
    )


def _tool_calls(stored: Any) -> tuple[StoredToolCall, ...] | None:
    if stored is None or stored == "null":
        return None
    if not isinstance(stored, str):
        raise Unreadable("tool calls")
    calls = json.loads(stored)
    if not calls:
        return None
    if not isinstance(calls, list):
        raise Unreadable("tool calls")
    return tuple(_tool_call(call) for call in calls)


def _tool_call(call: Any) -> StoredToolCall:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        raise Unreadable("tool call")
    function = call["function"]
    ident, name, arguments = call.get("id"), function.get("name"), function.get("arguments", "{}")
    if not (isinstance(ident, str) and isinstance(name, str) and isinstance(arguments, str)):
        raise Unreadable("tool call")
    if call.get("type", "function") != "function":
        raise Unreadable("tool call")
    return StoredToolCall(id=ident, function=StoredFunction(name=name, arguments=arguments))


def _utc_text(stored: str) -> str:
    """``2026-01-02T03:04:05.123456+00:00`` as the document writes it, ``…Z``."""
    return _utc(stored).isoformat().replace("+00:00", "Z")


def _utc(stored: str) -> datetime:
    """A stored time, which is in UTC; ``Unreadable`` for any other."""
    try:
        moment = datetime.fromisoformat(stored)
    except ValueError as exc:
        raise Unreadable("time") from exc
    if moment.utcoffset() != timedelta(0):
        raise Unreadable("time")
    return moment


def world_is_settled(conn: sqlite3.Connection, world: str, approval_timeout: float) -> bool:
    """Whether opening the world's runtime would change nothing: no tool run left
    ``running`` (a stopped process's runs are logged as interrupted), no approval request
    overdue (it would be denied), no queued work (it would be run)."""
    if conn.execute(RUNNING_TOOLS, {"world_key": world, "status_key": "running"}).fetchone():
        return False
    if conn.execute(CHATS_WITH_WORK, {"world_key": world}).fetchone():
        return False
    now = datetime.now(UTC)
    return all(now - a.created_at <= timedelta(seconds=approval_timeout) for a in approvals(conn, world))


def approvals(conn: sqlite3.Connection, world: str) -> list[StoredApproval]:
    """The world's pending approval requests, oldest first."""
    params = {"world_key": world, "kind_key": "approval", "status_key": "pending"}
    return [stored_approval(row) for row in conn.execute(PENDING_CALLS, params)]


def stored_approval(row: tuple[Any, ...]) -> StoredApproval:
    """An approval request from a row of ``PENDING_CALLS``, as ``pending_rows.row_call``
    reads it; ``Unreadable`` for anything the model would read differently or refuse."""
    world, call_id, chat_id, agent, _kind, tool_name, _arguments, _batch, _sender, _reply, detail, *rest = row
    created = rest[1]
    if not all(isinstance(value, str) for value in (world, call_id, chat_id, agent, tool_name, created, detail)):
        raise Unreadable("approval columns")
    fields = json.loads(detail)
    if not isinstance(fields, dict):
        raise Unreadable("approval detail")
    message, tool_args = fields.get("message"), fields.get("toolArgs")
    if not isinstance(message, str) or not isinstance(tool_args, dict):
        raise Unreadable("approval detail")
    if not isinstance(fields.get("originalCallId"), str) or not isinstance(fields.get("requestMessageId"), str):
        raise Unreadable("approval detail")
    shell = _shell(fields.get("shell"))
    sandbox = _sandbox(fields.get("sandbox"))
    return StoredApproval(
        world, call_id, chat_id, agent, tool_name, tool_args, message, shell, sandbox, _utc(created)
    )


def _sandbox(shown: Any) -> StoredSandbox:
    """The containment a request showed, as ``PendingApproval.sandbox`` reads it."""
    if shown is None:
        return UNRECORDED_SANDBOX
    if not isinstance(shown, dict) or set(shown) != {"active", "writable", "network", "summary"}:
        raise Unreadable("sandbox display")
    active, writable, network, summary = (shown[key] for key in ("active", "writable", "network", "summary"))
    if not (isinstance(active, bool) and isinstance(summary, str) and network in ("deny", "allow")):
        raise Unreadable("sandbox display")
    if not isinstance(writable, list) or not all(isinstance(path, str) for path in writable):
        raise Unreadable("sandbox display")
    return StoredSandbox(active, tuple(writable), network, summary)


def _shell(shown: Any) -> ShellView | None:
    if shown is None:
        return None
    if not isinstance(shown, dict):
        raise Unreadable("shell display")
    line, directory, commands = shown.get("commandLine"), shown.get("directory"), shown.get("commands")
    note = shown.get("note", "")
    if not (isinstance(line, str) and isinstance(directory, str) and isinstance(note, str)):
        raise Unreadable("shell display")
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise Unreadable("shell display")
    understood = shown.get("understood")
    if not isinstance(understood, bool):
        raise Unreadable("shell display")
    return ShellView(line, directory, tuple(commands), understood, note)
