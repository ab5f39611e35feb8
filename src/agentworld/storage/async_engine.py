"""PostgreSQL units of work: SQLAlchemy's async engine with asyncpg (see ``engine``).

Kept apart from the SQLite runner so that neither path loads the other's machinery. Each
connection opens within a connect timeout (``faults.connect_options``). After the server
restarts, the pool still holds connections to the old one: the first unit that gets one fails
at its first statement, SQLAlchemy sees the disconnect and retires every connection pooled
before it, and the unit runs once more on a fresh one (nothing of it ran, so nothing is done
twice). Asking the server before every unit (``pool_pre_ping``) would cost a round trip each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import sqlalchemy as sa

from agentworld import strict_json
from agentworld.storage.connection import Connection
from agentworld.storage.faults import connect_options
from agentworld.storage.pg_connection import PgConnection

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

T = TypeVar("T")


class AsyncEngineRunner:
    """SQLAlchemy's async engine (asyncpg), each unit on a pooled connection."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        # Imported here so the SQLite path (and CLI start-up) never loads the async machinery.
        from sqlalchemy.ext.asyncio import create_async_engine

        url, timeouts = connect_options(url)
        self._engine = create_async_engine(
            url,
            echo=echo,
            json_serializer=strict_json.dumps,
            connect_args=timeouts,
        )
        self._write_lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        """The event loop the pooled connections belong to (the first unit's)."""
        self._elsewhere: AsyncEngine | None = None
        """For units run from another event loop: connections of their own, closed after."""

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        if not write:
            return await self._on_live_connection(fn)
        async with self._write_lock:
            return await self._on_live_connection(fn)

    async def _on_live_connection(self, fn: Callable[[Connection], T]) -> T:
        """``fn`` in a unit, and once more when the connection it got was dead before the unit
        ran any statement (a pooled connection to a server that has restarted since)."""
        from sqlalchemy.exc import DBAPIError

        used: list[PgConnection] = []

        def unit(conn: sa.Connection) -> T:
            pg = PgConnection(conn)
            used.append(pg)
            return fn(pg)

        try:
            return await self._unit(unit)
        except DBAPIError as exc:
            if not exc.connection_invalidated or not used or used[-1].statements_run:
                raise
        return await self._unit(unit)

    async def run_schema(self, fn: Callable[[sa.Connection], T]) -> T:
        async with self._write_lock:
            return await self._unit(fn)

    async def close(self) -> None:
        await self._engine.dispose()
        if self._elsewhere is not None:
            await self._elsewhere.dispose()

    async def _unit(self, fn: Callable[[sa.Connection], T]) -> T:
        async with self._engine_here().connect() as conn, conn.begin():
            return await conn.run_sync(fn)

    def _engine_here(self) -> AsyncEngine:
        """The pooled engine, or, on an event loop other than the one its connections belong
        to (a command that runs its own ``asyncio.run``), one without a pool."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        if loop is self._loop:
            return self._engine
        if self._elsewhere is None:
            from sqlalchemy.ext.asyncio import create_async_engine
            from sqlalchemy.pool import NullPool

            self._elsewhere = create_async_engine(
                self._engine.url, echo=self._engine.echo, json_serializer=strict_json.dumps,
                poolclass=NullPool,
            )
        return self._elsewhere
