"""PostgreSQL units of work: SQLAlchemy's async engine with asyncpg (see ``engine``).

Kept apart from the SQLite runner so that neither path loads the other's machinery. Each
connection opens within a connect timeout (``faults.connect_options``), and the pool tests a
connection before lending it (``pool_pre_ping``): after the server restarts, the pool's dead
connections are replaced instead of failing the next units one by one.
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
            pool_pre_ping=True,
        )
        self._write_lock = asyncio.Lock()

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        def unit(conn: sa.Connection) -> T:
            return fn(PgConnection(conn))

        if not write:
            return await self._unit(unit)
        async with self._write_lock:
            return await self._unit(unit)

    async def run_schema(self, fn: Callable[[sa.Connection], T]) -> T:
        async with self._write_lock:
            return await self._unit(fn)

    async def close(self) -> None:
        await self._engine.dispose()

    async def _unit(self, fn: Callable[[sa.Connection], T]) -> T:
        async with self._engine.connect() as conn, conn.begin():
            return await conn.run_sync(fn)
