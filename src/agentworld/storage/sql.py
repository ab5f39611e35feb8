"""The SQL store: one class, portable SQL, append-only message writes.

``SQLStorage`` is assembled from its parts: ``core`` (the runner and ``in_transaction``),
``catalog`` (worlds, agents, chats), ``messages`` (memories, transcripts, usage,
events) and ``branches`` (a chat copied up to a message), plus the sub-stores ``pending``,
``approvals``, ``tool_logs``, ``inbox`` (each chat's queued work), ``leases`` (which process
runs a chat) and ``cuts`` (a chat's messages removed from one onward).

Each public method does its whole job as one synchronous function of a
``sqlalchemy.Connection``, run in one transaction by ``in_transaction`` (see ``engine``:
a worker thread for SQLite, the async engine for PostgreSQL). The functions are
closures so a method reads top to bottom; the SQL inside is the same for both
backends.
"""

from __future__ import annotations

from typing import Literal

from agentworld.errors import StorageError
from agentworld.storage.approvals import ApprovalStore
from agentworld.storage.branches import BranchStore
from agentworld.storage.catalog import CatalogStore
from agentworld.storage.connection import Connection
from agentworld.storage.cuts import CutStore
from agentworld.storage.engine import Runner, open_runner
from agentworld.storage.inbox import InboxStore
from agentworld.storage.leases import LeaseStore
from agentworld.storage.messages import MessageStore
from agentworld.storage.pending import PendingCallStore
from agentworld.storage.statement import Sql
from agentworld.storage.tool_logs import ToolLogStore
from agentworld.storage.url import resolve_database_url, sqlite_file
from agentworld.storage.usage import UsageStore
from agentworld.storage.versions import schema_is_current
from agentworld.storage.world_changes import WorldChangesStore

LeftBehind = Literal["tool_runs", "approvals", "work"]
"""What a stopped process may have left in a world for the next runtime to take up: tool
runs still marked running, approval requests or questions waiting (some may be overdue), queued work or
a chat lease never released."""

_LEFT_BEHIND = Sql(
    "SELECT"
    " EXISTS (SELECT 1 FROM tool_logs WHERE world = :world_key AND status = 'running'),"
    " EXISTS (SELECT 1 FROM pending_calls"
    " WHERE world = :world_key AND kind IN ('approval', 'question') AND status = 'pending'),"
    " EXISTS (SELECT 1 FROM chat_inbox WHERE world = :world_key)"
    " OR EXISTS (SELECT 1 FROM chat_leases WHERE world = :world_key)"
)
"""Asked by every runtime that starts, and nearly always answered "nothing". Written as text,
the same for both backends."""


class SQLStorage(CatalogStore, MessageStore, BranchStore, WorldChangesStore):
    """All persistent state of Agent World, behind plain async methods."""

    def __init__(self, url: str | None = None, *, echo: bool = False) -> None:
        self.url = resolve_database_url(url)
        self._runner: Runner | None = None
        self._echo = echo
        self.pending = PendingCallStore(self)
        self.approvals = ApprovalStore(self)
        self.tool_logs = ToolLogStore(self)
        self.inbox = InboxStore(self)
        self.leases = LeaseStore(self)
        self.cuts = CutStore(self)
        self.usage = UsageStore(self)

    async def open(self) -> SQLStorage:
        """Connect and bring the schema up to date (SPEC: older databases are upgraded)."""
        path = sqlite_file(self.url)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(
                    f"cannot create database directory {path.parent}: {exc}"
                ) from exc
        runner = open_runner(self.url, echo=self._echo)
        self._runner = runner
        try:
            if not await self.in_transaction(schema_is_current, write=False):
                from agentworld.storage import migrations  # SQLAlchemy's DDL: only when needed

                await self.in_schema_transaction(migrations.upgrade)
        except BaseException:
            # A server that cannot be reached is a one-line StorageError by now (``faults``).
            self._runner = None
            await runner.close()
            raise
        return self

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.close()

    async def left_behind(self, world: str) -> frozenset[LeftBehind]:
        """What stopped processes left in the world to take up (``LeftBehind``); one read."""

        def read(conn: Connection) -> frozenset[LeftBehind]:
            runs, approvals, work = conn.execute(_LEFT_BEHIND, {"world_key": world}).first()
            kinds: list[tuple[LeftBehind, bool]] = [
                ("tool_runs", runs), ("approvals", approvals), ("work", work)
            ]
            return frozenset(kind for kind, found in kinds if found)

        return await self.in_transaction(read, write=False)

    async def __aenter__(self) -> SQLStorage:
        return await self.open()

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

