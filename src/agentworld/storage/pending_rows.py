"""Rows of the pending-calls table and the statements read on every turn: how a waiting
call is stored and read back as its typed case (``models.pending``), kept apart from the
store's operations (``storage.pending``)."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any, assert_never

import sqlalchemy as sa
from pydantic import TypeAdapter

from agentworld.models.pending import PendingApproval, PendingCall, PendingClientCall
from agentworld.storage import schema
from agentworld.storage.connection import Connection, Row
from agentworld.storage.rows import ts

TABLE = schema.pending_calls
_PENDING_CALL: TypeAdapter[PendingCall] = TypeAdapter(PendingCall)
_bp = sa.bindparam
_TABLE = TABLE


@functools.cache
def find_statement(by_chat: bool, by_kind: bool, by_status: bool, by_batch: bool) -> sa.Select[Any]:
    """The ``find`` query for one combination of filters, built once with bind parameters
    (``send`` runs it after every turn; see ``storage.queries``)."""
    query = sa.select(_TABLE).where(_TABLE.c.world == _bp("world_key"))
    if by_chat:
        query = query.where(_TABLE.c.chat_id == _bp("chat_key"))
    if by_kind:
        query = query.where(_TABLE.c.kind == _bp("kind_key"))
    if by_status:
        query = query.where(_TABLE.c.status == _bp("status_key"))
    if by_batch:
        query = query.where(_TABLE.c.batch_id == _bp("batch_key"))
    return query.order_by(_TABLE.c.created_at, _TABLE.c.tool_call_id)


def _used_ids_statement() -> sa.CompoundSelect:
    """Where a tool call id can already be in use (see ``ApprovalStore.before_tool_calls``), built once."""
    messages, logs = schema.messages, schema.tool_logs
    wanted: sa.BindParameter[list[str]] = _bp("wanted", expanding=True)
    return sa.union(
        sa.select(_TABLE.c.tool_call_id).where(
            _TABLE.c.world == _bp("world_key"), _TABLE.c.tool_call_id.in_(wanted)
        ),
        sa.select(messages.c.tool_call_id).where(
            messages.c.world == _bp("world_key"), messages.c.tool_call_id.in_(wanted)
        ),
        sa.select(logs.c.tool_call_id).where(
            logs.c.world == _bp("world_key"), logs.c.tool_call_id.in_(wanted)
        ),
    )


USED_IDS = _used_ids_statement()


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
    """The ``detail`` column: the case's own fields as JSON (a client call has none)."""
    match call:
        case PendingApproval():
            return call.detail
        case PendingClientCall():
            return {}
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
        case PendingClientCall():
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
