"""Storage of waiting tool calls: add, list, and answer exactly once (atomically, across processes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal,
    NotRequired,
    TypedDict,
    TypeVar,
    Unpack,
    assert_never,
    overload,
)

import sqlalchemy as sa

from agentworld.errors import InvalidInputError, NotFoundError
from agentworld.models import Message, utc_now
from agentworld.models.pending import (
    PendingApproval,
    PendingCall,
    PendingClientCall,
    PendingKind,
)
from agentworld.models.work import InboxChange
from agentworld.storage import schema
from agentworld.storage.connection import Connection
from agentworld.storage.inbox import apply_change
from agentworld.storage.pending_rows import (
    TABLE,
    audited_arguments,
    call_row,
    find_calls,
    row_call,
)
from agentworld.storage.rows import message_row

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

_TABLE = TABLE
_INSERT_CALLS = sa.insert(_TABLE)
_INSERT_MESSAGES = sa.insert(schema.messages)
_START_LOG = sa.insert(schema.tool_logs).returning(schema.tool_logs.c.seq)


def cancel_agent_calls(
    conn: Connection, world: str, agent: str, *, reason: str, actor: str
) -> list[str]:
    """Cancel the agent's waiting calls and approvals, each with an audit entry, inside the
    caller's transaction (the agent is being deleted): none can be answered, so none runs.
    Returns the cancelled ids."""
    now = utc_now().isoformat()
    rows = conn.execute(
        sa.select(_TABLE).where(
            _TABLE.c.world == world,
            sa.func.lower(_TABLE.c.agent) == agent.lower(),
            _TABLE.c.status == "pending",
        )
    ).all()
    if not rows:
        return []
    ids = [row.tool_call_id for row in rows]
    conn.execute(
        sa.update(_TABLE)
        .where(
            _TABLE.c.world == world, _TABLE.c.tool_call_id.in_(ids), _TABLE.c.status == "pending"
        )
        .values(status="cancelled", answered_at=now, answer={"reason": reason, "actor": actor})
    )
    conn.execute(
        sa.insert(schema.audit_log),
        [
            {
                "world": world,
                "at": now,
                "event": "cancelled",
                "actor": actor,
                "approval_id": call.tool_call_id,
                "agent": call.agent,
                "chat_id": call.chat_id,
                "tool_name": call.tool_name,
                "arguments": audited_arguments(call),
                "detail": {"kind": call.kind, "reason": reason},
            }
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
        case _:
            assert_never(call)


def _calls_in_memory(
    conn: Connection, world: str, agent: str, message_id: str
) -> list[dict[str, Any]]:
    """The tool calls that message ``message_id`` of the agent's memory carries, as stored
    (none when the memory has no such message): the memory, not the pending rows, is the source
    of truth for what a batch asked."""
    messages = schema.messages
    row = conn.execute(
        sa.select(messages.c.tool_calls).where(
            messages.c.world == world,
            messages.c.memory_owner == agent,
            messages.c.message_id == message_id,
        )
    ).first()
    return list(row.tool_calls or ()) if row is not None else []


class _Filters(TypedDict, total=False):
    """What ``PendingCallStore.find`` narrows the waiting calls by, besides their kind; one left
    out keeps ``find_calls``' default (any chat, only those still pending, any batch)."""

    chat_id: str | None
    status: str | None
    batch_id: str | None


class _AnswerArgs(TypedDict):
    """What ``PendingCallStore.answer`` is given besides the call and its kind, spelled once for
    its overloads: they differ only in the kind (the implementation holds the defaults)."""

    answer: dict[str, Any]
    results: list[Message]
    status: NotRequired[str]
    start_log: NotRequired[dict[str, Any] | None]
    inbox: NotRequired[InboxChange | None]


_Call = TypeVar("_Call", bound=PendingClientCall | PendingApproval, covariant=True)


@dataclass(frozen=True)
class Answered(Generic[_Call]):
    """The outcome of ``PendingCallStore.answer``: the call as now stored, of the kind asked."""

    call: _Call
    remaining: int
    """How many calls of the same batch still wait; the loop resumes at zero."""
    log_id: int | None = None


class PendingCallStore:
    def __init__(self, storage: StorageCore) -> None:
        self._storage = storage

    async def add(self, calls: list[PendingCall], *, memory: Sequence[Message] = ()) -> None:
        """Record waiting calls, with the messages that announce them in the agent's memory,
        in one transaction (an approval request never exists without its pending row)."""
        if not calls:
            return
        messages = [message_row(calls[0].world, calls[0].agent, m) for m in memory]
        rows = [call_row(c) for c in calls]

        def insert(conn: Connection) -> None:
            if messages:
                conn.execute(_INSERT_MESSAGES, messages)
            conn.execute(_INSERT_CALLS, rows)

        await self._storage.in_transaction(insert, write=True)

    async def claim_resume(
        self, world: str, batch_id: str, *, inbox: InboxChange | None = None
    ) -> bool:
        """Atomically claim the right to resume a batch's loop: true for exactly one caller,
        whose ``inbox`` change (the loop that continues) is committed with the claim."""

        def claim(conn: Connection) -> bool:
            result = conn.execute(
                sa.update(_TABLE)
                .where(
                    _TABLE.c.world == world,
                    _TABLE.c.batch_id == batch_id,
                    _TABLE.c.resumed_at.is_(None),
                )
                .values(resumed_at=utc_now().isoformat())
            )
            if result.rowcount:
                apply_change(conn, world, inbox)
            return bool(result.rowcount)

        return await self._storage.in_transaction(claim, write=True)

    async def missing_results(self, world: str, agent: str, batch_id: str) -> list[str]:
        """Ids of the batch's tool calls that have no result in the agent's memory yet."""
        messages = schema.messages

        def read(conn: Connection) -> list[str]:
            ids = [call["id"] for call in _calls_in_memory(conn, world, agent, batch_id)]
            if not ids:
                return []
            answered = {
                r.tool_call_id
                for r in conn.execute(
                    sa.select(messages.c.tool_call_id).where(
                        messages.c.world == world,
                        messages.c.memory_owner == agent,
                        messages.c.role == "tool",
                        messages.c.tool_call_id.in_(ids),
                    )
                )
            }
            return [i for i in ids if i not in answered]

        return await self._storage.in_transaction(read, write=False)

    async def waited_for(
        self, world: str, batch_id: str, *, unanswered_only: bool = False
    ) -> set[str]:
        """Ids of the batch's calls that someone outside the loop is responsible for: a
        person's approval (asked, or given and about to run) or a client's result; with
        ``unanswered_only``, only those whose answer has not come (a given approval's call
        was running, or about to)."""
        query = sa.select(_TABLE).where(_TABLE.c.world == world, _TABLE.c.batch_id == batch_id)
        if unanswered_only:
            query = query.where(_TABLE.c.status == "pending")

        def read(conn: Connection) -> set[str]:
            ids: set[str] = set()
            for row in conn.execute(query):
                call = row_call(row)
                match call:
                    case PendingApproval():
                        ids.add(call.original_call_id)
                    case PendingClientCall():
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
            row = conn.execute(
                sa.select(_TABLE).where(
                    _TABLE.c.world == world, _TABLE.c.tool_call_id == tool_call_id
                )
            ).first()
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

    async def find(
        self, world: str, *, kind: PendingKind | None = None, **filters: Unpack[_Filters]
    ) -> list[PendingClientCall] | list[PendingApproval] | list[PendingCall]:
        """The world's waiting calls, oldest first; ``kind`` narrows the type of the result
        (the query filters on the same column that picks each row's class)."""

        def read(conn: Connection) -> list[PendingCall]:
            return find_calls(conn, world, kind=kind, **filters)

        return await self._storage.in_transaction(read, write=False)

    @overload
    async def answer(
        self, world: str, tool_call_id: str, *, kind: Literal["client"],
        **given: Unpack[_AnswerArgs],
    ) -> Answered[PendingClientCall]: ...

    @overload
    async def answer(
        self, world: str, tool_call_id: str, *, kind: Literal["approval"],
        **given: Unpack[_AnswerArgs],
    ) -> Answered[PendingApproval]: ...

    async def answer(
        self,
        world: str,
        tool_call_id: str,
        *,
        kind: PendingKind,
        answer: dict[str, Any],
        results: list[Message],
        status: str = "answered",
        start_log: dict[str, Any] | None = None,
        inbox: InboxChange | None = None,
    ) -> Answered[PendingCall]:
        """Mark the call answered, store its result messages in the agent's memory and (for an
        approved call) record the start of the tool's execution — all in one transaction, so
        "approved" never exists without "started" (SPEC A6: a crash cannot run it twice).

        The status check is part of the UPDATE, so of two processes answering the same call
        only one succeeds; the other gets a clear refusal (SPEC A3).
        """

        def write(conn: Connection) -> Answered[PendingCall]:
            row = conn.execute(
                sa.select(_TABLE).where(
                    _TABLE.c.world == world, _TABLE.c.tool_call_id == tool_call_id
                )
            ).first()
            if row is None or row.kind != kind:
                what = "approval request" if kind == "approval" else "pending tool call"
                raise NotFoundError(f"no {what} {tool_call_id!r} in world {world!r}")
            refuse_closed(row_call(row))
            if row.status != "pending":
                raise InvalidInputError(
                    f"{tool_call_id!r} is already {row.status}; it cannot be answered again"
                )
            updated = conn.execute(
                sa.update(_TABLE)
                .where(
                    _TABLE.c.world == world,
                    _TABLE.c.tool_call_id == tool_call_id,
                    _TABLE.c.status == "pending",
                )
                .values(status=status, answered_at=utc_now().isoformat(), answer=answer)
            )
            if updated.rowcount != 1:
                raise InvalidInputError(
                    f"{tool_call_id!r} was answered concurrently; not answered again"
                )
            if results:
                conn.execute(_INSERT_MESSAGES, [message_row(world, row.agent, m) for m in results])
            log_id: int | None = None
            if start_log is not None:
                inserted = conn.execute(_START_LOG, start_log)
                log_id = int(inserted.scalar_one())
            apply_change(conn, world, inbox)
            remaining = conn.execute(
                sa.select(sa.func.count()).where(
                    _TABLE.c.world == world,
                    _TABLE.c.batch_id == row.batch_id,
                    _TABLE.c.status == "pending",
                )
            ).scalar_one()
            call = row_call(row).model_copy(update={"status": status, "answer": answer})
            return Answered(call, int(remaining), log_id)

        return await self._storage.in_transaction(write, write=True)
