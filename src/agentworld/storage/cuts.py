"""Removing a chat's messages from one of them onward (SPEC K2: edit and delete onward).

One transaction removes the message and everything after it in its chat: the transcript rows
from it on with their event-log rows (the log's ``seq`` is never reused, and a reader
resuming after an old position never gets a removed message), what every agent's memory of
the chat took in since (its copies of the messages that stay are kept), the waiting calls of
the removed part (approval requests, questions, client calls: answering one afterwards is
refused as unknown), all the chat's queued work (it belongs to the turns removed); it gives
every agent a fresh turn budget, as a person's message does, counts the cut in ``chats.cuts``
(a process that keeps a memory it read earlier reads it afresh, ``runtime.memory_cache``),
records the removal in the audit log with the removed transcript messages, and logs the
``crud`` event that announces it. An edit's new message is stored in the same transaction,
in the removed message's place, with its route queued. Tool logs and the audit log keep
their history.

Refused (``BusyError``) while another process runs the chat: its lease is held by a live
owner. The check is a claim of the lease in the same transaction (let go again before it
commits unless the caller held it), the chat's row locked first on PostgreSQL (as a post locks
it), so no process claims the chat or posts into it half way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from agentworld.errors import BusyError, NotEditableError, NotFoundError
from agentworld.models import Message, utc_now
from agentworld.models.events import CrudEvent
from agentworld.models.records import AuditEntry
from agentworld.models.work import InboxChange
from agentworld.storage import queries
from agentworld.storage.approvals import INSERT_AUDIT, audit_row
from agentworld.storage.connection import Connection
from agentworld.storage.event_log import event_row, insert_log_rows
from agentworld.storage.inbox import apply_change
from agentworld.storage.leases import hold_while, release_lease
from agentworld.storage.rows import CHAT_MESSAGES, message_row, row_message, ts
from agentworld.storage.statement import Sql

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

_CHAT_ROW: Final = "SELECT chats.chat_id FROM chats WHERE chats.world = :world_key AND chats.chat_id = :chat_key"
_LOCK_CHAT: Final = Sql(_CHAT_ROW, postgresql=_CHAT_ROW + " FOR UPDATE")
_TRANSCRIPT: Final = f"{CHAT_MESSAGES} AND messages.memory_owner IS NULL"
_MESSAGE: Final = Sql(f"{_TRANSCRIPT} AND messages.message_id = :message_key ORDER BY messages.seq LIMIT 1")
"""A transcript message of the chat, by id, with its position."""
_FROM: Final = Sql(f"{_TRANSCRIPT} AND messages.seq >= :start_seq ORDER BY messages.seq")
"""The transcript from a position on: what a cut removes."""
_REMOVED_IDS: Final = (
    "SELECT removed.message_id FROM messages removed WHERE removed.world = :world_key"
    " AND removed.chat_id = :chat_key AND removed.memory_owner IS NULL"
    " AND removed.seq >= :start_seq"
)
_FIRST_ROW: Final = Sql(
    "SELECT min(messages.seq) FROM messages WHERE messages.world = :world_key"
    f" AND messages.chat_id = :chat_key AND messages.message_id IN ({_REMOVED_IDS})"
)
"""Where the removed messages' first row is, in a memory or the transcript: a step stores an
agent's message in its memory just before it says it in the transcript."""
_WAITING_OF_REMOVED: Final = (
    "FROM pending_calls WHERE pending_calls.world = :world_key"
    f" AND pending_calls.chat_id = :chat_key AND (pending_calls.batch_id IN ({_REMOVED_IDS})"
    " OR pending_calls.created_at >= :start_at)"
)
_WAITING_IDS: Final = Sql(f"SELECT pending_calls.tool_call_id {_WAITING_OF_REMOVED}")
_DELETE_WAITING: Final = Sql(f"DELETE {_WAITING_OF_REMOVED}")
"""The calls of the batches removed (an approval request, a question and a client call all
name the agent's message that made the call as their batch), and those asked since the first
removed message was said (of a batch made before a person's message, whose request came after
it), whatever their state."""
_DELETE_LOGGED: Final = Sql(
    "DELETE FROM events WHERE events.world = :world_key AND events.chat_id = :chat_key"
    f" AND events.kind = 'message' AND events.message_id IN ({_REMOVED_IDS})"
)
_DELETE_MEMORIES: Final = Sql(
    "DELETE FROM messages WHERE world = :world_key AND chat_id = :chat_key"
    " AND memory_owner IS NOT NULL AND seq >= :first_seq AND message_id NOT IN"
    " (SELECT kept.message_id FROM messages kept WHERE kept.world = :world_key"
    " AND kept.chat_id = :chat_key AND kept.memory_owner IS NULL AND kept.seq < :start_seq)"
)
"""What the agents' memories took in from the removed part on: every row from the first of
the removed messages on, but an agent's copies of messages that stay in the transcript (an
agent may hear an earlier message after a later one was posted)."""
_DELETE_TRANSCRIPT: Final = Sql(
    "DELETE FROM messages WHERE world = :world_key AND chat_id = :chat_key"
    " AND memory_owner IS NULL AND seq >= :start_seq"
)
_DELETE_QUEUED: Final = Sql("DELETE FROM chat_inbox WHERE world = :world_key AND chat_id = :chat_key")
_COUNT_CUT: Final = Sql(
    "UPDATE chats SET cuts = cuts + 1, updated_at = :now WHERE world = :world_key AND chat_id = :chat_key"
)


@dataclass(frozen=True)
class Cut:
    """What a cut removed, and where an edit's new message went."""

    start: Message
    """The first message removed: the one asked for, or the agent's message that made the
    calls a tool result or approval request answers (a batch is removed whole)."""
    removed: tuple[str, ...]
    """The transcript messages removed, by id, in order."""
    memory_rows: int
    """Rows removed from the agents' memories of the chat."""
    calls: tuple[str, ...]
    """The waiting calls removed (approval requests, questions, client calls), by id."""
    dropped: int
    """Items of the chat's inbox dropped."""
    event: CrudEvent
    """The ``crud`` event that announces the cut, stored in the log with it."""
    after_seq: int | None
    """With a new message: the transcript position just before it (what it causes is read
    from there)."""


def said_by_a_person(message: Message) -> bool:
    """Whether ``message`` is a person's: only those can be edited (SPEC K2)."""
    return (
        message.role == "user"
        and message.agent_id is None
        and message.sender.lower() not in ("world", "system")
    )


def refuse_unless_editable(message: Message) -> None:
    """``NotEditableError`` unless ``message`` is a person's (``said_by_a_person``)."""
    if not said_by_a_person(message):
        raise NotEditableError(
            f"message {message.message_id!r} is {message.sender}'s, not a person's: only a"
            " person's message can be edited (delete it and what follows instead)"
        )


def _batch_start(message: Message) -> str | None:
    """The agent's message whose batch of calls ``message`` answers or asks about (a tool
    result, an injected approval request), or None for a message of its own."""
    if message.role == "tool":
        return message.reply_to_message_id
    calls = message.tool_calls or ()
    if message.role == "assistant" and calls and all(c.function.name.startswith("client.") for c in calls):
        return message.reply_to_message_id
    return None


class CutStore:
    """Cuts of a chat's messages (see the module docstring)."""

    def __init__(self, storage: StorageCore) -> None:
        self._storage = storage

    async def message(self, world: str, chat_id: str, message_id: str) -> Message:
        """The chat's transcript message ``message_id``; ``NotFoundError`` for an unknown
        world, chat or message (a message of another chat is unknown here)."""

        def read(conn: Connection) -> Message:
            return row_message(_find(conn, world, chat_id, message_id))

        return await self._storage.in_transaction(read, write=False)

    async def cut(
        self,
        world: str,
        chat_id: str,
        message_id: str,
        *,
        owner: str,
        actor: str = "human",
        replacement: Message | None = None,
        inbox: InboxChange | None = None,
    ) -> Cut:
        """Remove the message and everything after it in the chat, in one transaction (see the
        module docstring); with ``replacement`` (an edit: the message must be a person's, else
        ``NotEditableError``), store it in its place with ``inbox`` (its route). ``owner``: the
        lease owner the caller runs the chat as; another live owner makes it ``BusyError``."""

        def write(conn: Connection) -> Cut:
            params: dict[str, Any] = {"world_key": world, "chat_key": chat_id}
            if conn.execute(_LOCK_CHAT, params).first() is None:
                queries.require_world(conn, world)
                raise NotFoundError(f"chat {chat_id!r} not found in world {world!r}")
            row = _find(conn, world, chat_id, message_id)
            asked = row_message(row)
            if replacement is not None:
                refuse_unless_editable(asked)
            runner, held = hold_while(conn, world, chat_id, owner)
            if runner is not None:
                raise BusyError(
                    f"chat {chat_id!r} is being run by another process ({runner}): stop its work"
                    " there, or retry when it has finished"
                )
            start, start_seq = asked, int(row.seq)
            batch = _batch_start(asked)
            if batch is not None:
                found = conn.execute(_MESSAGE, {**params, "message_key": batch}).first()
                if found is not None and found.seq < start_seq:
                    start, start_seq = row_message(found), int(found.seq)
            params["start_seq"] = start_seq
            params["start_at"] = ts(start.created_at)
            removed = [row_message(r) for r in conn.execute(_FROM, params).all()]
            first = conn.execute(_FIRST_ROW, params).scalar()
            calls = tuple(str(r[0]) for r in conn.execute(_WAITING_IDS, params).all())
            conn.execute(_DELETE_WAITING, params)
            conn.execute(_DELETE_LOGGED, params)
            memory_rows = conn.execute(
                _DELETE_MEMORIES, {**params, "first_seq": min(int(first or start_seq), start_seq)}
            ).rowcount
            conn.execute(_DELETE_TRANSCRIPT, params)
            dropped = conn.execute(_DELETE_QUEUED, params).rowcount
            conn.execute(queries.RESET_LLM_CALLS, params)
            conn.execute(_COUNT_CUT, {**params, "now": ts(utc_now())})
            ids = tuple(m.message_id for m in removed)
            edited = replacement is not None
            event = CrudEvent(
                world=world,
                operation="delete",
                entity="message",
                name=start.message_id,
                chat_id=chat_id,
                data={"messageIds": list(ids), "edited": edited},
            )
            detail: dict[str, Any] = {
                "messageId": message_id,
                "removed": len(ids),
                "messages": [m.to_json() for m in removed],
                "memoryRows": int(memory_rows or 0),
                "waitingCalls": list(calls),
                "queuedWork": int(dropped or 0),
            }
            if replacement is not None:
                detail["newMessageId"] = replacement.message_id
            entry = AuditEntry(
                event="message_edited" if edited else "messages_deleted",
                actor=actor,
                chat_id=chat_id,
                agent=asked.agent_id,
                detail=detail,
            )
            conn.execute(INSERT_AUDIT, audit_row(world, entry))
            insert_log_rows(conn, [event_row(event)])  # before the new message: the order told
            after_seq = None
            if replacement is not None:
                seq = queries.insert_into_chat(conn, message_row(world, None, replacement))
                assert seq is not None  # the chat's row is locked: it is there
                after_seq = seq - 1
                apply_change(conn, world, inbox)
            if not held:
                release_lease(conn, world, chat_id, owner)
            return Cut(start, ids, int(memory_rows or 0), calls, int(dropped or 0), event, after_seq)

        return await self._storage.in_transaction(write, write=True)


def _find(conn: Connection, world: str, chat_id: str, message_id: str) -> Any:
    """The row of the chat's transcript message ``message_id`` (with its ``seq``)."""
    params = {"world_key": world, "chat_key": chat_id, "message_key": message_id}
    row = conn.execute(_MESSAGE, params).first()
    if row is not None:
        return row
    if conn.execute(queries.CHAT_EXISTS, params).first() is None:
        queries.require_world(conn, world)
        raise NotFoundError(f"chat {chat_id!r} not found in world {world!r}")
    raise NotFoundError(f"message {message_id!r} not found in chat {chat_id!r} of world {world!r}")
