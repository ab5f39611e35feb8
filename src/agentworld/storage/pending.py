"""Storage of waiting tool calls: add, list, and answer exactly once (atomically, across processes)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from agentworld.errors import InvalidInputError, NotFoundError
from agentworld.models import Message, utc_now
from agentworld.models.pending import PendingCall, PendingKind
from agentworld.storage import schema
from agentworld.storage.rows import message_row

if TYPE_CHECKING:
    from agentworld.storage.sql import SQLStorage

_TABLE = schema.pending_calls


def _row(call: PendingCall) -> dict[str, Any]:
    return {
        "world": call.world,
        "tool_call_id": call.tool_call_id,
        "chat_id": call.chat_id,
        "agent": call.agent,
        "kind": call.kind,
        "tool_name": call.tool_name,
        "arguments": call.arguments,
        "batch_id": call.batch_id,
        "trigger_sender": call.trigger_sender,
        "reply_to": call.reply_to,
        "detail": call.detail,
        "status": call.status,
        "created_at": call.created_at.isoformat(),
        "answered_at": call.answered_at.isoformat() if call.answered_at else None,
        "answer": call.answer,
    }


def _call(row: sa.Row[Any]) -> PendingCall:
    return PendingCall(
        world=row.world,
        tool_call_id=row.tool_call_id,
        chat_id=row.chat_id,
        agent=row.agent,
        kind=row.kind,
        tool_name=row.tool_name,
        arguments=row.arguments,
        batch_id=row.batch_id,
        trigger_sender=row.trigger_sender,
        reply_to=row.reply_to,
        detail=row.detail or {},
        status=row.status,
        created_at=datetime.fromisoformat(row.created_at),
        answered_at=datetime.fromisoformat(row.answered_at) if row.answered_at else None,
        answer=row.answer,
    )


class PendingCallStore:
    def __init__(self, storage: SQLStorage) -> None:
        self._storage = storage

    async def add(self, calls: list[PendingCall]) -> None:
        if calls:
            async with self._storage._write() as conn:
                await conn.execute(sa.insert(_TABLE), [_row(c) for c in calls])

    async def get(self, world: str, tool_call_id: str) -> PendingCall | None:
        async with self._storage._read() as conn:
            row = (
                await conn.execute(
                    sa.select(_TABLE).where(_TABLE.c.world == world, _TABLE.c.tool_call_id == tool_call_id)
                )
            ).first()
        return _call(row) if row is not None else None

    async def find(
        self,
        world: str,
        *,
        chat_id: str | None = None,
        kind: PendingKind | None = None,
        status: str | None = "pending",
        batch_id: str | None = None,
    ) -> list[PendingCall]:
        query = sa.select(_TABLE).where(_TABLE.c.world == world)
        if chat_id is not None:
            query = query.where(_TABLE.c.chat_id == chat_id)
        if kind is not None:
            query = query.where(_TABLE.c.kind == kind)
        if status is not None:
            query = query.where(_TABLE.c.status == status)
        if batch_id is not None:
            query = query.where(_TABLE.c.batch_id == batch_id)
        async with self._storage._read() as conn:
            rows = (await conn.execute(query.order_by(_TABLE.c.created_at, _TABLE.c.tool_call_id))).all()
        return [_call(r) for r in rows]

    async def answer(
        self,
        world: str,
        tool_call_id: str,
        *,
        kind: PendingKind,
        answer: dict[str, Any],
        results: list[Message],
        status: str = "answered",
    ) -> tuple[PendingCall, int]:
        """Mark the call answered and store its result messages in the agent's memory, in one
        transaction; returns the call and how many calls of its batch still wait.

        The status check is part of the UPDATE, so of two processes answering the same call
        only one succeeds; the other gets a clear refusal (SPEC A3).
        """
        async with self._storage._write() as conn:
            row = (
                await conn.execute(
                    sa.select(_TABLE).where(_TABLE.c.world == world, _TABLE.c.tool_call_id == tool_call_id)
                )
            ).first()
            if row is None or row.kind != kind:
                what = "approval request" if kind == "approval" else "pending tool call"
                raise NotFoundError(f"no {what} {tool_call_id!r} in world {world!r}")
            if row.status != "pending":
                raise InvalidInputError(f"{tool_call_id!r} was already {row.status}; it cannot be answered again")
            now = utc_now().isoformat()
            updated = await conn.execute(
                sa.update(_TABLE)
                .where(
                    _TABLE.c.world == world,
                    _TABLE.c.tool_call_id == tool_call_id,
                    _TABLE.c.status == "pending",
                )
                .values(status=status, answered_at=now, answer=answer)
            )
            if updated.rowcount != 1:
                raise InvalidInputError(f"{tool_call_id!r} was answered concurrently; not answered again")
            if results:
                await conn.execute(
                    sa.insert(schema.messages), [message_row(world, row.agent, m) for m in results]
                )
            remaining = (
                await conn.execute(
                    sa.select(sa.func.count()).where(
                        _TABLE.c.world == world,
                        _TABLE.c.batch_id == row.batch_id,
                        _TABLE.c.status == "pending",
                    )
                )
            ).scalar_one()
        call = _call(row).model_copy(update={"status": status, "answer": answer})
        return call, int(remaining)
