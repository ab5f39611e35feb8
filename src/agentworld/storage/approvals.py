"""Storage of approval grants and of the approval audit log (SPEC A5, A9)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from agentworld.approval.grants import Grant, PolicyState
from agentworld.errors import NotFoundError
from agentworld.models import utc_now
from agentworld.models.records import AuditEntry
from agentworld.storage import queries
from agentworld.storage.connection import Connection, Row
from agentworld.storage.pending_rows import USED_IDS
from agentworld.storage.rows import row_record, row_world
from agentworld.storage.statement import ColumnKind, Sql

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

_INSERT_GRANT: Final = Sql(
    "INSERT INTO approval_grants (grant_id, world, scope, agent, chat_id, tool_name, roots,"
    " allow_redirection, approval_id, created_at, redirect_targets) VALUES (:grant_id, :world,"
    " :scope, :agent, :chat_id, :tool_name, :roots, :allow_redirection, :approval_id,"
    " :created_at, :redirect_targets)",
    json_params=("roots", "redirect_targets"),
)
_GRANT_TYPES: Final[Mapping[str, ColumnKind]] = {
    "roots": "json", "allow_redirection": "bool", "redirect_targets": "json"
}
_IN_FORCE_TEXT: Final = (
    "SELECT grant_id, world, scope, agent, chat_id, tool_name, roots, allow_redirection,"
    " approval_id, created_at, revoked_at, redirect_targets FROM approval_grants"
    " WHERE world = :world_key AND revoked_at IS NULL"
)
_IN_FORCE: Final = Sql(f"{_IN_FORCE_TEXT} ORDER BY created_at", columns=_GRANT_TYPES)
_IN_FORCE_OF_TOOL: Final = Sql(
    f"{_IN_FORCE_TEXT} AND tool_name = :tool_key ORDER BY created_at", columns=_GRANT_TYPES
)
_REVOKE: Final = (
    "UPDATE approval_grants SET revoked_at = :revoked_at"
    " WHERE world = :world AND revoked_at IS NULL AND "
)
_REVOKE_GRANT: Final = Sql(f"{_REVOKE}grant_id = :grant_id")
_REVOKE_OF_SESSION: Final = Sql(f"{_REVOKE}scope = 'session' AND lower(agent) = :agent")
"""The agent's session grants, its name in any case (``agent`` given in lower case)."""

_AUDIT_FIELDS: Final = (
    "at", "event", "actor", "approval_id", "agent", "chat_id", "tool_name", "arguments",
    "decision", "scope", "latency_ms", "detail",
)  # fmt: skip
"""The audit log's columns besides ``world`` and ``seq``: ``AuditEntry``'s fields, with
``tool_args`` stored as ``arguments``."""
_AUDIT_OF_WORLD: Final = Sql(
    f"SELECT seq, world, {', '.join(_AUDIT_FIELDS)} FROM audit_log"
    " WHERE world = :world_key ORDER BY seq",
    columns={"arguments": "json", "detail": "json"},
)
INSERT_AUDIT: Final = Sql(
    "INSERT INTO audit_log (world, at, event, actor, approval_id, agent, chat_id, tool_name,"
    " arguments, decision, scope, latency_ms, detail) VALUES (:world, :at, :event, :actor,"
    " :approval_id, :agent, :chat_id, :tool_name, NULLIF(:arguments, 'null'), :decision,"
    " :scope, :latency_ms, NULLIF(:detail, 'null'))",
    json_params=("arguments", "detail"),
    postgresql=(
        "INSERT INTO audit_log (world, at, event, actor, approval_id, agent, chat_id, tool_name,"
        " arguments, decision, scope, latency_ms, detail) VALUES (:world, :at, :event, :actor,"
        " :approval_id, :agent, :chat_id, :tool_name,"
        " CAST(NULLIF(CAST(:arguments AS TEXT), 'null') AS JSON), :decision, :scope,"
        " :latency_ms, CAST(NULLIF(CAST(:detail AS TEXT), 'null') AS JSON))"
    ),
)
"""An entry of the audit log (``audit_row``), one or many. A JSON field left None is SQL
NULL, not the JSON text ``null`` that a JSON parameter's None is written as: the entry has no
arguments, rather than arguments that are ``null``."""


def _grant(row: Row) -> Grant:
    return row_record(
        Grant,
        row,
        roots=frozenset(row.roots) if row.roots is not None else None,
        allow_redirection=bool(row.allow_redirection),
        redirect_targets=_targets(row.redirect_targets),
        created_at=datetime.fromisoformat(row.created_at),
    )


def _targets(stored: object) -> frozenset[str] | None:
    """A grant's redirect targets as stored: a list of paths; anything else (NULL on a grant
    stored before targets were recorded) is none, so the grant covers no line that writes."""
    if isinstance(stored, list) and stored and all(isinstance(t, str) for t in stored):
        return frozenset(stored)
    return None


def _audit_entry(row: Row) -> AuditEntry:
    # The closed-set columns hold only what ``audit_row`` (typed with the same literals) and
    # the deletions in ``storage`` wrote, so they are taken as they are.
    return row_record(
        AuditEntry, row, at=datetime.fromisoformat(row.at), tool_args=row.arguments
    )


def audit_row(world: str, entry: AuditEntry) -> dict[str, Any]:
    """An entry of the world's audit log as its row (``INSERT_AUDIT``): written by ``audit``,
    or by a deletion inside its own transaction. ``tool_args`` is stored as the ``arguments``
    column; every column is given, a field left None as None."""
    row: dict[str, Any] = {
        _AUDIT_COLUMN.get(field.name, field.name): getattr(entry, field.name)
        for field in dataclasses.fields(entry)
    }
    row["world"] = world
    row["at"] = entry.at.isoformat()
    return row


_AUDIT_COLUMN = {"tool_args": "arguments"}


def _revoke(conn: Connection, statement: Sql, world: str, **which: str) -> int:
    """Revoke the world's grants in force that ``statement`` picks by ``which``, inside the
    caller's transaction; returns how many were revoked. Revoked, not deleted: the audit log
    refers to them."""
    params = {"world": world, "revoked_at": utc_now().isoformat(), **which}
    return int(conn.execute(statement, params).rowcount or 0)


def revoke_session_grants(conn: Connection, world: str, agent: str) -> int:
    """Revoke the agent's session grants inside the caller's transaction (the agent is being
    deleted, and a new agent of the same name must not inherit them). "Always" grants belong
    to the world, not to an agent, and stay. Returns how many were revoked."""
    return _revoke(conn, _REVOKE_OF_SESSION, world, agent=agent.lower())


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
            "redirect_targets": sorted(grant.redirect_targets) if grant.redirect_targets else None,
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
            if _revoke(conn, _REVOKE_GRANT, world, grant_id=grant_id) == 0:
                raise NotFoundError(f"no active grant {grant_id!r} in world {world!r}")

        await self._storage.in_transaction(update, write=True)

    async def audit(self, world: str, entry: AuditEntry) -> None:
        """Add ``entry`` to the world's audit log (its arguments already redacted)."""
        row = audit_row(world, entry)

        def insert(conn: Connection) -> None:
            conn.execute(INSERT_AUDIT, row)

        await self._storage.in_transaction(insert, write=True)

    async def audit_log(self, world: str) -> list[AuditEntry]:
        """The world's audit log, oldest entry first."""
        def read(conn: Connection) -> list[AuditEntry]:
            return [_audit_entry(r) for r in conn.execute(_AUDIT_OF_WORLD, {"world_key": world})]

        return await self._storage.in_transaction(read, write=False)
