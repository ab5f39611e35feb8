"""Rows of the pending-calls table and the statements read on every turn: how a waiting
call is stored and read back as its typed case (``models.pending``), kept apart from the
store's operations (``storage.pending``)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, assert_never

from pydantic import TypeAdapter

from agentworld.models.pending import (
    PendingApproval,
    PendingCall,
    PendingClientCall,
    PendingQuestion,
)
from agentworld.storage.connection import Connection, Row
from agentworld.storage.rows import ts
from agentworld.storage.statement import ColumnKind, Sql

_PENDING_CALL: TypeAdapter[PendingCall] = TypeAdapter(PendingCall)

COLUMNS: Final = (
    "pending_calls.world, pending_calls.tool_call_id, pending_calls.chat_id, "
    "pending_calls.agent, pending_calls.kind, pending_calls.tool_name, pending_calls.arguments, "
    "pending_calls.batch_id, pending_calls.trigger_sender, pending_calls.reply_to, "
    "pending_calls.detail, pending_calls.status, pending_calls.created_at, "
    "pending_calls.answered_at, pending_calls.answer, pending_calls.resumed_at"
)
"""Every column of ``pending_calls``, for ``SELECT``: what ``row_call`` reads."""
JSON_COLUMNS: Final[Mapping[str, ColumnKind]] = {"detail": "json", "answer": "json"}
"""The columns of ``COLUMNS`` stored as JSON."""


@functools.cache
def find_statement(by_chat: bool, by_kind: bool, by_status: bool, by_batch: bool) -> Sql:
    """The ``find`` query for one combination of filters, built once (``send`` runs it after
    every turn)."""
    where = ["pending_calls.world = :world_key"]
    if by_chat:
        where.append("pending_calls.chat_id = :chat_key")
    if by_kind:
        where.append("pending_calls.kind = :kind_key")
    if by_status:
        where.append("pending_calls.status = :status_key")
    if by_batch:
        where.append("pending_calls.batch_id = :batch_key")
    return Sql(
        f"SELECT {COLUMNS} FROM pending_calls WHERE {' AND '.join(where)}"
        " ORDER BY pending_calls.created_at, pending_calls.tool_call_id",
        columns=JSON_COLUMNS,
    )


USED_IDS: Final = Sql(
    "SELECT tool_call_id FROM pending_calls WHERE world = :world_key AND tool_call_id IN :wanted"
    " UNION SELECT tool_call_id FROM messages WHERE world = :world_key AND tool_call_id IN :wanted"
    " UNION SELECT tool_call_id FROM tool_logs WHERE world = :world_key AND tool_call_id IN :wanted",
    lists=("wanted",),
)
"""Where a tool call id can already be in use (see ``ApprovalStore.before_tool_calls``)."""


_AS_STORED = (
    "world",
    "tool_call_id",
    "chat_id",
    "agent",
    "kind",
    "tool_name",
    "arguments",
    "batch_id",
    "trigger_sender",
    "reply_to",
    "status",
    "answer",
)
"""The columns that hold the waiting call's field of the same name as it is. The others are
its times, as text, and ``detail``, the fields of its case (``resumed_at`` is the batch's)."""


def call_row(call: PendingCall) -> dict[str, Any]:
    return {
        **{name: getattr(call, name) for name in _AS_STORED},
        "detail": _detail(call),
        "created_at": call.created_at.isoformat(),
        "answered_at": ts(call.answered_at),
    }


def _detail(call: PendingCall) -> dict[str, Any]:
    """The ``detail`` column: the case's own fields as JSON (a client call has none), and the
    call's trace context when it has one."""
    traced = {"traceparent": call.traceparent} if call.traceparent else {}
    match call:
        case PendingApproval() | PendingQuestion():
            return {**call.detail, **traced}
        case PendingClientCall():
            return traced
        case _:
            assert_never(call)


def row_call(row: Row) -> PendingCall:
    """A stored row as its typed case, validated like any stored JSON: ``kind`` picks the
    class, and an approval's fields come from the ``detail`` column (by their aliases)."""
    return _PENDING_CALL.validate_python(
        {
            **(row.detail or {}),
            **{name: getattr(row, name) for name in _AS_STORED},
            "created_at": datetime.fromisoformat(row.created_at),
            "answered_at": datetime.fromisoformat(row.answered_at) if row.answered_at else None,
        }
    )


def audited_arguments(call: PendingCall) -> dict[str, Any] | None:
    """An approval keeps the redacted arguments it showed; a client call's raw arguments are
    not copied into the audit log."""
    match call:
        case PendingApproval():
            return call.tool_args
        case PendingClientCall() | PendingQuestion():
            return None
        case _:
            assert_never(call)


def find_calls(
    conn: Connection,
    world: str,
    *,
    chat_id: str | None = None,
    kind: str | None = None,
    status: str | None = "pending",
    batch_id: str | None = None,
) -> list[PendingCall]:
    """The world's waiting calls, oldest first, inside the caller's transaction."""
    query = find_statement(
        chat_id is not None, kind is not None, status is not None, batch_id is not None
    )
    params = {
        "world_key": world,
        "chat_key": chat_id,
        "kind_key": kind,
        "status_key": status,
        "batch_key": batch_id,
    }
    return [row_call(r) for r in conn.execute(query, params)]
