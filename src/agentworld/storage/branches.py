"""Branching a chat (SPEC K1): a new chat whose transcript and every agent's memory are the
source chat's up to and including one of its messages (mixed into ``SQLStorage``).

The copy is one transaction and leaves the source as it was. What it copies is read by
message and position: transcript and memories share one sequence (``messages.seq``). A memory
row of a message said in the chat (the agent's own, or its copy of what it heard) is in the
branch when that message is -- also a copy taken in after the chosen message (``route_step``:
a message joins the memories of those it calls on after it enters the transcript), or the
agent would not have heard what the branch shows it was told; a row of the memory alone is in
it when it was written no later than the chosen message. What waits in the source (approvals,
questions, client calls, queued work, its lease) stays there.

Every copied message gets a new id, with its ``reply_to`` link mapped inside the branch:
lookups find a transcript message, or the batch a waiting call belongs to, by id in the whole
world (the event log, ``PendingCallStore.holds_call``, ``missing_results``). Tool calls keep
their ids when the branch holds their results (the source holds the same ones). A call the
branch cut off from its result -- it ran, or waits for a person, after the chosen message --
gets a new id and, unless it is an approval request the runtime injected (never shown to a
model), the result ``BRANCHED``: the branch's memories end with no open call, so the next turn
in the branch sends the model a whole history and runs nothing left over, and no result of the
branch can answer a call still waiting in the source.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from agentworld.errors import NotFoundError
from agentworld.models import Chat, new_id, utc_now
from agentworld.models.domain import BranchOf
from agentworld.storage import queries
from agentworld.storage.connection import Connection, Row
from agentworld.storage.core import StorageCore
from agentworld.storage.rows import MESSAGE_COLUMNS_SQL
from agentworld.storage.statement import Sql

BRANCHED: Final = (
    "not run in this chat: it was branched from another chat before this call's result came."
    " Call it again if it is still needed."
)
"""The error result of a call whose result came after the message a branch was made from."""
BRANCH_SUFFIX: Final = " (branch)"
"""Added to the source chat's name to name a branch."""
MAX_NAME: Final = 200
"""The width of ``chats.name``."""
_APPROVAL_REQUEST: Final = "client.requestApproval"
"""The call the runtime injects to ask a person (``runtime.approvals``): hidden from models,
it needs no result to keep a prompt whole."""

_SOURCE_CHAT = Sql(
    "SELECT chats.name FROM chats WHERE chats.world = :world_key AND chats.chat_id = :chat_key"
)
_CUT = Sql(
    "SELECT messages.seq FROM messages WHERE messages.world = :world_key"
    " AND messages.message_id = :message_key AND messages.chat_id = :chat_key"
    " AND messages.memory_owner IS NULL ORDER BY messages.seq"
)
"""The position of the chosen transcript message (of this chat: another chat's is unknown)."""
_CHAT_OF_MESSAGE = Sql(
    "SELECT messages.chat_id FROM messages WHERE messages.world = :world_key"
    " AND messages.message_id = :message_key AND messages.memory_owner IS NULL"
)
_SAID = (
    "SELECT 1 FROM messages said WHERE said.world = messages.world"
    " AND said.chat_id = messages.chat_id AND said.memory_owner IS NULL"
    " AND said.message_id = messages.message_id"
)
_COPIED = Sql(
    f"SELECT {MESSAGE_COLUMNS_SQL}, messages.memory_owner FROM messages"
    " WHERE messages.world = :world_key AND messages.chat_id = :chat_key AND ("
    "(messages.memory_owner IS NULL AND messages.seq <= :cut_seq)"
    f" OR (messages.memory_owner IS NOT NULL AND EXISTS ({_SAID} AND said.seq <= :cut_seq))"
    " OR (messages.memory_owner IS NOT NULL AND messages.seq <= :cut_seq"
    f" AND NOT EXISTS ({_SAID}))"
    ") ORDER BY messages.seq"
)
"""What the branch copies: the transcript up to the chosen message; the agents' memory rows of
those messages, whenever the agents took them in; and the rows that are the memory's alone
(none is said in the chat) written no later than the chosen message. A step stores its
memory rows before its transcript rows, so position alone would give an agent a second
message of a step the branch's transcript stops short of."""
_INSERT_BRANCH = Sql(
    "INSERT INTO chats (world, chat_id, name, titled, created_at, updated_at, branch_of,"
    " branch_message) VALUES (:world, :chat_id, :name, TRUE, :created_at, :updated_at,"
    " :branch_of, :branch_message)"
)
"""A branch: titled, so the generated title never replaces the name that says where it came
from."""


def branch_name(source: str) -> str:
    """The name of a branch of the chat named ``source``: that name, and that it is a branch."""
    return source[: MAX_NAME - len(BRANCH_SUFFIX)].rstrip() + BRANCH_SUFFIX


def branch_rows(
    source: Sequence[dict[str, Any]], chat_id: str, *, now: datetime
) -> list[dict[str, Any]]:
    """The ``messages`` rows (``rows.message_row`` shape) of a branch ``chat_id`` made of the
    ``source`` rows, in order: new message ids, ``reply_to`` mapped, token counts left out
    (the branch spent none), and each call cut off from its result renamed and answered with
    ``BRANCHED`` right after its message (see the module docstring). Pure."""
    ids: dict[str, str] = {}
    for row in source:
        ids.setdefault(row["message_id"], new_id("msg_"))
    answered = {(row["memory_owner"], row["tool_call_id"]) for row in source if row["role"] == "tool"}
    renamed: dict[str, str] = {}
    for row in source:
        owner = row["memory_owner"]
        for call in row["tool_calls"] or ():
            if owner is not None and (owner, call["id"]) not in answered:
                renamed.setdefault(call["id"], _fresh_call_id(call["id"]))
    copied: list[dict[str, Any]] = []
    for row in source:
        message_id = ids[row["message_id"]]
        calls = [_renamed_call(call, renamed) for call in row["tool_calls"] or ()]
        copied.append(
            {
                **row,
                "chat_id": chat_id,
                "message_id": message_id,
                "tool_calls": calls or None,
                "tool_call_id": renamed.get(row["tool_call_id"], row["tool_call_id"]),
                "reply_to": ids.get(row["reply_to"], row["reply_to"]),
                "input_tokens": None,
                "output_tokens": None,
            }
        )
        owner = row["memory_owner"]
        if owner is None:
            continue
        copied.extend(
            _branched_result(row, owner, call["id"], chat_id, message_id, now)
            for original, call in zip(row["tool_calls"] or (), calls, strict=True)
            if original["id"] in renamed and call["function"]["name"] != _APPROVAL_REQUEST
        )
    return copied


def _fresh_call_id(original: str) -> str:
    """A new id for a call, keeping the start of the old one (an approval request's
    ``approval_``, a provider's own prefix) within the column's 128 characters."""
    return f"{original[:100]}-{new_id()}"


def _renamed_call(call: dict[str, Any], renamed: dict[str, str]) -> dict[str, Any]:
    """``call`` with its id renamed, and, for an approval request, the call it asks about."""
    copy = {**call, "id": renamed.get(call["id"], call["id"])}
    function = call.get("function") or {}
    if function.get("name") != _APPROVAL_REQUEST:
        return copy
    try:
        request = json.loads(function.get("arguments") or "")
    except ValueError:
        return copy
    if isinstance(request, dict) and request.get("toolCallId") in renamed:
        request["toolCallId"] = renamed[request["toolCallId"]]
        copy["function"] = {**function, "arguments": json.dumps(request)}
    return copy


def _branched_result(
    batch: dict[str, Any], owner: str, call_id: str, chat_id: str, batch_id: str, now: datetime
) -> dict[str, Any]:
    """The result in ``owner``'s memory of a call the branch cut off from its own result."""
    return {
        "world": batch["world"],
        "chat_id": chat_id,
        "memory_owner": owner,
        "message_id": new_id("msg_"),
        "role": "tool",
        "sender": owner,
        "agent_id": owner,
        "content": json.dumps({"error": BRANCHED}),
        "tool_calls": None,
        "tool_call_id": call_id,
        "reply_to": batch_id,
        "created_at": now.isoformat(),
        "input_tokens": None,
        "output_tokens": None,
        "model": None,
        "cost_usd": None,
    }


def _source_row(world: str, row: Row) -> dict[str, Any]:
    """A stored message as the row to copy (``rows.message_row``'s shape, calls decoded)."""
    (message_id, chat_id, role, sender, agent_id, content, tool_calls, tool_call_id,
     reply_to, created_at, _input, _output, _seq, owner) = row  # fmt: skip
    if isinstance(tool_calls, str):  # SQLite's stored text (asyncpg hands it over decoded)
        tool_calls = json.loads(tool_calls)
    return {
        "world": world,
        "chat_id": chat_id,
        "memory_owner": owner,
        "message_id": message_id,
        "role": role,
        "sender": sender,
        "agent_id": agent_id,
        "content": content,
        "tool_calls": tool_calls or None,
        "tool_call_id": tool_call_id,
        "reply_to": reply_to,
        "created_at": created_at,
        "input_tokens": None,
        "output_tokens": None,
        "model": None,
        "cost_usd": None,
    }


class BranchStore(StorageCore):
    async def chat_of_message(self, world: str, message_id: str) -> str:
        """The chat whose transcript holds message ``message_id`` (``NotFoundError`` if none)."""

        def read(conn: Connection) -> str:
            params = {"world_key": world, "message_key": message_id}
            chat_id = conn.execute(_CHAT_OF_MESSAGE, params).scalar()
            if chat_id is None:
                queries.require_world(conn, world)
                raise NotFoundError(f"message {message_id!r} not found in world {world!r}")
            return str(chat_id)

        return await self.in_transaction(read, write=False)

    async def branch_chat(self, world: str, chat_id: str, message_id: str, *, new_chat_id: str) -> Chat:
        """Make chat ``new_chat_id``, a branch of ``chat_id`` up to and including its message
        ``message_id`` (see the module docstring), in one transaction; ``NotFoundError`` for
        an unknown world, chat, or message of that chat's transcript."""
        params = {"world_key": world, "chat_key": chat_id, "message_key": message_id}

        def write(conn: Connection) -> Chat:
            source_name = conn.execute(_SOURCE_CHAT, params).scalar()
            if source_name is None:
                queries.require_world(conn, world)
                raise NotFoundError(f"chat {chat_id!r} not found in world {world!r}")
            cut = conn.execute(_CUT, params).scalar()
            if cut is None:
                raise NotFoundError(f"message {message_id!r} not found in chat {chat_id!r}")
            now = utc_now()
            chat = Chat(
                world=world,
                chat_id=new_chat_id,
                name=branch_name(source_name),
                created_at=now,
                updated_at=now,
                branch_of=BranchOf(chat_id=chat_id, message_id=message_id),
            )
            conn.execute(
                _INSERT_BRANCH,
                {
                    "world": world,
                    "chat_id": new_chat_id,
                    "name": chat.name,
                    "created_at": now.isoformat(),
                    "updated_at": now.isoformat(),
                    "branch_of": chat_id,
                    "branch_message": message_id,
                },
            )
            found = conn.execute(_COPIED, {**params, "cut_seq": cut}).all()
            rows = branch_rows([_source_row(world, r) for r in found], new_chat_id, now=now)
            queries.insert_messages(conn, rows)
            said = sum(1 for row in rows if row["memory_owner"] is None)
            return chat.model_copy(update={"message_count": said})

        taken = f"chat {new_chat_id!r} already exists in world {world!r}"
        return await self.in_transaction(write, write=True, duplicate=taken)
