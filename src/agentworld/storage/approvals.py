"""Storage of approval grants and of the approval audit log (SPEC A5, A9)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from agentworld.approval.grants import Grant, PolicyState
from agentworld.errors import NotFoundError
from agentworld.models import utc_now
from agentworld.models.records import AuditEntry
from agentworld.storage import queries, schema
from agentworld.storage.connection import Connection, Row
from agentworld.storage.pending_rows import USED_IDS
from agentworld.storage.rows import row_record, row_world

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

_GRANTS = schema.approval_grants
_AUDIT = schema.audit_log
_INSERT_GRANT = sa.insert(_GRANTS)
_INSERT_AUDIT = sa.insert(_AUDIT)
_IN_FORCE = (
    sa.select(_GRANTS)
    .where(_GRANTS.c.world == sa.bindparam("world_key"), _GRANTS.c.revoked_at.is_(None))
    .order_by(_GRANTS.c.created_at)
)
_IN_FORCE_OF_TOOL = _IN_FORCE.where(_GRANTS.c.tool_name == sa.bindparam("tool_key"))
_AUDIT_OF_WORLD = (
    sa.select(_AUDIT).where(_AUDIT.c.world == sa.bindparam("world_key")).order_by(_AUDIT.c.seq)
)
"""Built once with bind parameters (see ``storage.queries``): a statement built per call is
compiled per call."""


def _grant(row: Row) -> Grant:
    return row_record(
        Grant,
        row,
        roots=frozenset(row.roots) if row.roots is not None else None,
        allow_redirection=bool(row.allow_redirection),
        created_at=datetime.fromisoformat(row.created_at),
    )


def _audit_entry(row: Row) -> AuditEntry:
    # The closed-set columns hold only what ``audit_row`` (typed with the same literals) and
    # the deletions in ``storage`` wrote, so they are taken as they are.
    return row_record(
        AuditEntry, row, at=datetime.fromisoformat(row.at), tool_args=row.arguments
    )


def audit_row(world: str, entry: AuditEntry) -> dict[str, Any]:
    """An entry of the world's audit log as its row: written by ``audit``, or by a deletion
    inside its own transaction. ``tool_args`` is stored as the ``arguments`` column."""
    row: dict[str, Any] = {"world": world}
    for field in dataclasses.fields(entry):
        value = getattr(entry, field.name)
        # A field left None is left out, not written: a JSON column would store None as the
        # JSON text ``null`` rather than as SQL NULL.
        if value is not None:
            row[_AUDIT_COLUMN.get(field.name, field.name)] = value
    row["at"] = entry.at.isoformat()
    return row


_AUDIT_COLUMN = {"tool_args": "arguments"}


def revoke_grants(conn: Connection, world: str, *which: sa.ColumnElement[bool]) -> int:
    """Revoke the world's grants in force that match ``which``, inside the caller's
    transaction; returns how many were revoked. Revoked, not deleted: the audit log refers
    to them."""
    result = conn.execute(
        sa.update(_GRANTS)
        .where(_GRANTS.c.world == world, *which, _GRANTS.c.revoked_at.is_(None))
        .values(revoked_at=utc_now().isoformat())
    )
    return int(result.rowcount or 0)


def revoke_session_grants(conn: Connection, world: str, agent: str) -> int:
    """Revoke the agent's session grants inside the caller's transaction (the agent is being
    deleted, and a new agent of the same name must not inherit them). "Always" grants belong
    to the world, not to an agent, and stay. Returns how many were revoked."""
    return revoke_grants(
        conn, world, _GRANTS.c.scope == "session", sa.func.lower(_GRANTS.c.agent) == agent.lower()
    )


class ApprovalStore:
    def __init__(self, storage: StorageCore) -> None:
        self._storage = storage

    async def add_grant(self, grant: Grant) -> None:
        row = {
            "grant_id": grant.grant_id,
            "world": grant.world,
            "scope": grant.scope,
            "agent": grant.agent,
            "chat_id": grant.chat_id,
            "tool_name": grant.tool_name,
            "roots": sorted(grant.roots) if grant.roots is not None else None,
            "allow_redirection": grant.allow_redirection,
            "approval_id": grant.approval_id,
            "created_at": (grant.created_at or utc_now()).isoformat(),
        }

        def insert(conn: Connection) -> None:
            conn.execute(_INSERT_GRANT, row)

        await self._storage.in_transaction(insert, write=True)

    async def before_tool_calls(
        self, world: str, call_ids: Collection[str]
    ) -> tuple[set[str], PolicyState]:
        """In one read, what a batch of tool calls needs first: which of ``call_ids`` the
        world already uses -- a waiting call or approval (whose table keys on the id), a
        stored tool result, or a tool execution log; a model may repeat an id, and storing it
        again would break the pairing of calls and results -- and the world's settings and
        grants in force, which authorize the batch's first call (later ones read afresh:
        ``tool_calls.run_tool_calls``)."""
        wanted = sorted(set(call_ids))

        def read(conn: Connection) -> tuple[set[str], PolicyState]:
            settings = queries.world_row(conn, world)
            grants = tuple(_grant(r) for r in conn.execute(_IN_FORCE, {"world_key": world}))
            used: set[str] = set()
            if wanted:
                used = {row[0] for row in conn.execute(USED_IDS, {"world_key": world, "wanted": wanted})}
            return used, PolicyState(row_world(settings), grants)

        return await self._storage.in_transaction(read, write=False)

    async def grants(self, world: str, *, tool_name: str | None = None) -> list[Grant]:
        """Active (not revoked) grants of the world."""
        query, params = (
            (_IN_FORCE, {"world_key": world})
            if tool_name is None
            else (_IN_FORCE_OF_TOOL, {"world_key": world, "tool_key": tool_name})
        )

        def read(conn: Connection) -> list[Grant]:
            return [_grant(r) for r in conn.execute(query, params)]

        return await self._storage.in_transaction(read, write=False)

    async def revoke(self, world: str, grant_id: str) -> None:
        def update(conn: Connection) -> None:
            if revoke_grants(conn, world, _GRANTS.c.grant_id == grant_id) == 0:
                raise NotFoundError(f"no active grant {grant_id!r} in world {world!r}")

        await self._storage.in_transaction(update, write=True)

    async def audit(self, world: str, entry: AuditEntry) -> None:
        """Add ``entry`` to the world's audit log (its arguments already redacted)."""
        row = audit_row(world, entry)

        def insert(conn: Connection) -> None:
            conn.execute(_INSERT_AUDIT, row)

        await self._storage.in_transaction(insert, write=True)

    async def audit_log(self, world: str) -> list[AuditEntry]:
        """The world's audit log, oldest entry first."""
        def read(conn: Connection) -> list[AuditEntry]:
            return [_audit_entry(r) for r in conn.execute(_AUDIT_OF_WORLD, {"world_key": world})]

        return await self._storage.in_transaction(read, write=False)
