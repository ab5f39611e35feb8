"""Storage of waiting tool calls: add, list, and answer exactly once (atomically, across processes)."""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    Literal,
    TypedDict,
    Unpack,
    assert_never,
    overload,
)

from agentworld.errors import InvalidInputError, NotFoundError
from agentworld.models import utc_now
from agentworld.models.pending import (
    PendingApproval,
    PendingCall,
    PendingClientCall,
    PendingKind,
    PendingQuestion,
)
from agentworld.models.records import AuditEntry
from agentworld.models.work import Answer, InboxChange
from agentworld.storage.approvals import INSERT_AUDIT, audit_row
from agentworld.storage.connection import Connection
from agentworld.storage.inbox import apply_change
from agentworld.storage.pending_rows import (
    COLUMNS,
    JSON_COLUMNS,
    audited_arguments,
    call_row,
    find_calls,
    row_call,
)
from agentworld.storage.statement import Sql

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

_INSERT_CALLS: Final = Sql(
    "INSERT INTO pending_calls (world, tool_call_id, chat_id, agent, kind, tool_name, arguments,"
    " batch_id, trigger_sender, reply_to, status, answer, detail, created_at, answered_at)"
    " VALUES (:world, :tool_call_id, :chat_id, :agent, :kind, :tool_name, :arguments,"
    " :batch_id, :trigger_sender, :reply_to, :status, :answer, :detail, :created_at,"
    " :answered_at)",
    json_params=("answer", "detail"),
)
"""A waiting call's row (``pending_rows.call_row``); ``resumed_at`` starts NULL."""
_INSERT_MESSAGES: Final = Sql(
    "INSERT INTO messages (world, chat_id, memory_owner, message_id, role, sender, agent_id,"
    " content, tool_calls, tool_call_id, reply_to, created_at, input_tokens, output_tokens)"
    " VALUES (:world, :chat_id, :memory_owner, :message_id, :role, :sender, :agent_id,"
    " :content, :tool_calls, :tool_call_id, :reply_to, :created_at, :input_tokens,"
    " :output_tokens)",
    json_params=("tool_calls",),
)
"""Messages of an agent's memory (``rows.message_row``): none is the transcript's, so none
has a row in the event log."""
_CALL: Final = Sql(
    f"SELECT {COLUMNS} FROM pending_calls WHERE world = :world AND tool_call_id = :tool_call_id",
    columns=JSON_COLUMNS,
)
_OF_BATCH: Final = Sql(
    f"SELECT {COLUMNS} FROM pending_calls WHERE world = :world AND batch_id = :batch_id",
    columns=JSON_COLUMNS,
)
_WAITING_OF_BATCH: Final = Sql(f"{_OF_BATCH.text} AND status = 'pending'", columns=JSON_COLUMNS)
_WAITING_OF_AGENT: Final = Sql(
    f"SELECT {COLUMNS} FROM pending_calls"
    " WHERE world = :world AND lower(agent) = :agent AND status = 'pending'",
    columns=JSON_COLUMNS,
)
"""The agent's waiting calls, its name in any case (``agent`` given in lower case)."""
_CANCEL: Final = Sql(
    "UPDATE pending_calls SET status = 'cancelled', answered_at = :answered_at, answer = :answer"
    " WHERE world = :world AND tool_call_id IN :ids AND status = 'pending'",
    json_params=("answer",),
    lists=("ids",),
)
_ANSWER: Final = Sql(
    "UPDATE pending_calls SET status = :status, answered_at = :answered_at, answer = :answer"
    " WHERE world = :world AND tool_call_id = :tool_call_id AND status = 'pending'",
    json_params=("answer",),
)
"""Answers the call only if it still waits: of two processes answering it, one changes it."""
_CLAIM_RESUME: Final = Sql(
    "UPDATE pending_calls SET resumed_at = :resumed_at"
    " WHERE world = :world AND batch_id = :batch_id AND resumed_at IS NULL"
)
_WAITING_IN_BATCH: Final = Sql(
    "SELECT count(*) FROM pending_calls"
    " WHERE world = :world AND batch_id = :batch_id AND status = 'pending'"
)
_CALLS_OF_MESSAGE: Final = Sql(
    "SELECT tool_calls FROM messages"
    " WHERE world = :world AND memory_owner = :agent AND message_id = :message_id",
    columns={"tool_calls": "json"},
)
_RESULTS_OF_CALLS: Final = Sql(
    "SELECT tool_call_id FROM messages WHERE world = :world AND memory_owner = :agent"
    " AND role = 'tool' AND tool_call_id IN :ids",
    lists=("ids",),
)


def insert_calls(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Insert waiting calls' rows (``pending_rows.call_row``) inside the caller's transaction."""
    conn.execute(_INSERT_CALLS, rows)


def cancel_agent_calls(
    conn: Connection, world: str, agent: str, *, reason: str, actor: str
) -> list[str]:
    """Cancel the agent's waiting calls and approvals, each with an audit entry, inside the
    caller's transaction (the agent is being deleted): none can be answered, so none runs.
    Returns the cancelled ids."""
    now = utc_now()
    rows = conn.execute(_WAITING_OF_AGENT, {"world": world, "agent": agent.lower()}).all()
    if not rows:
        return []
    ids = [row.tool_call_id for row in rows]
    conn.execute(
        _CANCEL,
        {
            "world": world,
            "ids": ids,
            "answered_at": now.isoformat(),
            "answer": {"reason": reason, "actor": actor},
        },
    )
    conn.execute(
        INSERT_AUDIT,
        [
            audit_row(
                world,
                AuditEntry(
                    at=now,
                    event="cancelled",
                    actor=actor,
                    approval_id=call.tool_call_id,
                    agent=call.agent,
                    chat_id=call.chat_id,
                    tool_name=call.tool_name,
                    tool_args=audited_arguments(call),
                    detail={"kind": call.kind, "reason": reason},
                ),
            )
            for call in map(row_call, rows)
        ],
    )
    return ids


def refuse_closed(call: PendingCall) -> None:
    """A call whose wait was cancelled is refused with the reason, before anything else."""
    if call.status == "cancelled":
        reason = (call.answer or {}).get("reason") or "it was cancelled"
        raise InvalidInputError(
            f"{_noun(call)} {call.tool_call_id!r} is no longer pending: {reason}"
        )


def _noun(call: PendingCall) -> str:
    match call:
        case PendingApproval():
            return "approval"
        case PendingClientCall():
            return "tool call"
        case PendingQuestion():
            return "question"
        case _:
            assert_never(call)


def _calls_in_memory(
    conn: Connection, world: str, agent: str, message_id: str
) -> list[dict[str, Any]]:
    """The tool calls that message ``message_id`` of the agent's memory carries, as stored
    (none when the memory has no such message): the memory, not the pending rows, is the source
    of truth for what a batch asked."""
    params = {"world": world, "agent": agent, "message_id": message_id}
    row = conn.execute(_CALLS_OF_MESSAGE, params).first()
    return list(row.tool_calls or ()) if row is not None else []


class _Filters(TypedDict, total=False):
    """What ``PendingCallStore.find`` narrows the waiting calls by, besides their kind; one left
    out keeps ``find_calls``' default (any chat, only those still pending, any batch)."""

    chat_id: str | None
    status: str | None
    batch_id: str | None


class PendingCallStore:
    def __init__(self, storage: StorageCore) -> None:
        self._storage = storage

    async def add(self, calls: list[PendingCall]) -> None:
        """Record waiting calls, in one transaction."""
        if not calls:
            return
        rows = [call_row(c) for c in calls]

        def insert(conn: Connection) -> None:
            insert_calls(conn, rows)

        await self._storage.in_transaction(insert, write=True)

    async def claim_resume(
        self, world: str, batch_id: str, *, inbox: InboxChange | None = None
    ) -> bool:
        """Atomically claim the right to resume a batch's loop: true for exactly one caller,
        whose ``inbox`` change (the loop that continues) is committed with the claim."""

        def claim(conn: Connection) -> bool:
            result = conn.execute(
                _CLAIM_RESUME,
                {"world": world, "batch_id": batch_id, "resumed_at": utc_now().isoformat()},
            )
            if result.rowcount:
                apply_change(conn, world, inbox)
            return bool(result.rowcount)

        return await self._storage.in_transaction(claim, write=True)

    async def missing_results(self, world: str, agent: str, batch_id: str) -> list[str]:
        """Ids of the batch's tool calls that have no result in the agent's memory yet."""

        def read(conn: Connection) -> list[str]:
            ids = [call["id"] for call in _calls_in_memory(conn, world, agent, batch_id)]
            if not ids:
                return []
            params = {"world": world, "agent": agent, "ids": ids}
            answered = {r.tool_call_id for r in conn.execute(_RESULTS_OF_CALLS, params)}
            return [i for i in ids if i not in answered]

        return await self._storage.in_transaction(read, write=False)

    async def waited_for(
        self, world: str, batch_id: str, *, unanswered_only: bool = False
    ) -> set[str]:
        """Ids of the batch's calls that someone outside the loop is responsible for: a
        person's approval (asked, or given and about to run), a person's answer to a question
        or a client's result; with
        ``unanswered_only``, only those whose answer has not come (a given approval's call
        was running, or about to)."""
        query = _WAITING_OF_BATCH if unanswered_only else _OF_BATCH

        def read(conn: Connection) -> set[str]:
            ids: set[str] = set()
            for row in conn.execute(query, {"world": world, "batch_id": batch_id}):
                call = row_call(row)
                match call:
                    case PendingApproval():
                        ids.add(call.original_call_id)
                    case PendingClientCall() | PendingQuestion():
                        ids.add(call.tool_call_id)
                    case _:
                        assert_never(call)
            return ids

        return await self._storage.in_transaction(read, write=False)

    async def holds_call(self, world: str, agent: str, message_id: str, tool_call_id: str) -> bool:
        """Whether the agent's memory has message ``message_id`` carrying call ``tool_call_id``
        (the ownership check of SPEC A3: the memory is the source of truth)."""

        def read(conn: Connection) -> bool:
            calls = _calls_in_memory(conn, world, agent, message_id)
            return any(c.get("id") == tool_call_id for c in calls)

        return await self._storage.in_transaction(read, write=False)

    async def get(self, world: str, tool_call_id: str) -> PendingCall | None:
        def read(conn: Connection) -> PendingCall | None:
            row = conn.execute(_CALL, {"world": world, "tool_call_id": tool_call_id}).first()
            return row_call(row) if row is not None else None

        return await self._storage.in_transaction(read, write=False)

    @overload
    async def find(
        self, world: str, *, kind: None = None, **filters: Unpack[_Filters]
    ) -> list[PendingCall]: ...

    @overload
    async def find(
        self, world: str, *, kind: Literal["client"], **filters: Unpack[_Filters]
    ) -> list[PendingClientCall]: ...

    @overload
    async def find(
        self, world: str, *, kind: Literal["approval"], **filters: Unpack[_Filters]
    ) -> list[PendingApproval]: ...

    @overload
    async def find(
        self, world: str, *, kind: Literal["question"], **filters: Unpack[_Filters]
    ) -> list[PendingQuestion]: ...

    async def find(
        self, world: str, *, kind: PendingKind | None = None, **filters: Unpack[_Filters]
    ) -> (
        list[PendingClientCall] | list[PendingApproval] | list[PendingQuestion] | list[PendingCall]
    ):
        """The world's waiting calls, oldest first; ``kind`` narrows the type of the result
        (the query filters on the same column that picks each row's class)."""

        def read(conn: Connection) -> list[PendingCall]:
            return find_calls(conn, world, kind=kind, **filters)

        return await self._storage.in_transaction(read, write=False)


def answer_call(conn: Connection, world: str, answer: Answer) -> PendingCall:
    """Mark a waiting call answered inside the caller's transaction, exactly once: the status
    check is part of the UPDATE, so of two processes answering the same call only one
    succeeds; the other gets a clear refusal (SPEC A3), and its transaction writes nothing."""
    tool_call_id = answer.tool_call_id
    row = conn.execute(_CALL, {"world": world, "tool_call_id": tool_call_id}).first()
    if row is None or row.kind != answer.kind:
        what = {
            "approval": "approval request",
            "question": "question",
            "client": "pending tool call",
        }[answer.kind]
        raise NotFoundError(f"no {what} {tool_call_id!r} in world {world!r}")
    refuse_closed(row_call(row))
    if row.status != "pending":
        raise InvalidInputError(
            f"{tool_call_id!r} is already {row.status}; it cannot be answered again"
        )
    updated = conn.execute(
        _ANSWER,
        {
            "world": world,
            "tool_call_id": tool_call_id,
            "status": answer.status,
            "answered_at": utc_now().isoformat(),
            "answer": answer.answer,
        },
    )
    if updated.rowcount != 1:
        raise InvalidInputError(f"{tool_call_id!r} was answered concurrently; not answered again")
    return row_call(row).model_copy(update={"status": answer.status, "answer": answer.answer})
