"""Where a unit of storage work runs: a worker thread for SQLite, the async engine for PostgreSQL.

Every storage method is one synchronous function of a ``connection.Connection`` (a
*unit of work*) run inside one transaction, so the SQL is written once for both backends:

* SQLite: the stdlib ``sqlite3`` driver on one dedicated thread that owns the connection.
  A unit costs one hop to that thread, where aiosqlite would make a hop per cursor step,
  and the thread serialises all of this process's work, so Python needs no lock of its
  own. Statements run on the ``sqlite3`` cursor itself (``sqlite_direct``), compiled once. Between processes, WAL mode and a busy timeout let readers and writers share the
  file, and write units start with ``BEGIN IMMEDIATE``, so a writer waits for the lock
  up front instead of failing half way with "database is locked".
* PostgreSQL: SQLAlchemy's async engine with asyncpg, running the same function through
  ``AsyncConnection.run_sync``. Writes of one process still queue on an ``asyncio.Lock``,
  as they always have, so check-then-insert units stay race-free in one process.

Schema work (``migrations``) needs SQLAlchemy's own connection (``inspect``, ``create``), so it
runs through ``run_schema`` on both backends.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.pool import SingletonThreadPool

from agentworld.storage.checkpoints import Checkpointer
from agentworld.storage.connection import Connection
from agentworld.storage.sqlite_direct import DirectConnection, StatementCache
from agentworld.storage.url import sqlite_sync_url

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000


class Runner(Protocol):
    """Runs units of work against one database, each in its own transaction."""

    @property
    def engine(self) -> sa.Engine | AsyncEngine: ...

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T: ...

    async def run_schema(self, fn: Callable[[sa.Connection], T]) -> T:
        """``fn`` on SQLAlchemy's own connection, in one write transaction."""
        ...

    async def close(self) -> None: ...


def open_runner(url: str, *, echo: bool = False) -> Runner:
    """The runner for a URL from ``resolve_database_url`` (``sqlite+aiosqlite`` or asyncpg)."""
    if url.startswith("sqlite"):
        return SQLiteRunner(sqlite_sync_url(url), echo=echo)
    return AsyncEngineRunner(url, echo=echo)


def _configure_sqlite_connection(dbapi_connection: Any, _record: Any) -> None:
    # Take transaction control away from the driver, so ``_unit`` decides how to BEGIN.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    # Checkpoints run on a thread of their own (``checkpoints``), not inside a unit's commit.
    cursor.execute("PRAGMA wal_autocheckpoint=0")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class SQLiteRunner:
    """A sync engine whose one connection lives on one worker thread."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        # A connection per thread: the worker's is made and closed on the worker, and anyone
        # else using ``engine`` (a test, a tool) gets a connection of their own rather than
        # share the worker's. ``check_same_thread`` is off only so ``dispose`` may close them
        # all from the worker.
        self._engine = sa.create_engine(
            url,
            echo=echo,
            poolclass=SingletonThreadPool,
            connect_args={"check_same_thread": False},
        )
        sa_event.listen(self._engine, "connect", _configure_sqlite_connection)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentworld-db")
        self._statements = StatementCache(self._engine.dialect)
        database = self._engine.url.database
        self._checkpoints = (
            Checkpointer(database) if database and database != ":memory:" else None
        )
        self._conn: sa.Connection | None = None
        self._direct: DirectConnection | None = None
        """Both touched only on the worker thread."""

    @property
    def engine(self) -> sa.Engine:
        return self._engine

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._unit, fn, write)

    async def run_schema(self, fn: Callable[[sa.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._schema_unit, fn)

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self._dispose)
        finally:
            # The queue is empty once ``_dispose`` ran, so this only joins an idle thread.
            self._executor.shutdown(wait=True)

    def _connection(self) -> sa.Connection:
        conn = self._conn
        if conn is None:
            conn = self._conn = self._engine.connect()
        return conn

    def _unit(self, fn: Callable[[Connection], T], write: bool) -> T:
        direct = self._direct
        if direct is None:
            raw = self._connection().connection.driver_connection
            assert isinstance(raw, sqlite3.Connection)
            direct = self._direct = DirectConnection(raw, self._statements)
        raw = direct.driver_connection
        try:
            raw.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                result = fn(direct)
            except BaseException:
                if raw.in_transaction:
                    raw.execute("ROLLBACK")
                raise
            raw.execute("COMMIT")
            if write and self._checkpoints is not None:
                self._checkpoints.committed()
            return result
        except sqlite3.IntegrityError:
            raise  # a refused row; the connection is fine
        except sqlite3.Error:
            # Whatever failed may have left the connection unusable: the next unit gets a
            # fresh one rather than inherit a broken state.
            self._drop(invalidate=True)
            raise

    def _schema_unit(self, fn: Callable[[sa.Connection], T]) -> T:
        conn = self._connection()
        try:
            with conn.begin():
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                return fn(conn)
        except IntegrityError:
            raise
        except DBAPIError:
            self._drop(invalidate=True)
            raise

    def _drop(self, *, invalidate: bool = False) -> None:
        self._direct = None
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if invalidate:
            conn.invalidate()
        conn.close()

    def _dispose(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.close()
        self._drop()
        self._engine.dispose()


class AsyncEngineRunner:
    """SQLAlchemy's async engine (asyncpg), each unit on a pooled connection."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        # Imported here so the SQLite path (and CLI start-up) never loads the async machinery.
        from sqlalchemy.ext.asyncio import create_async_engine

        self._engine = create_async_engine(url, echo=echo)
        self._write_lock = asyncio.Lock()

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        if not write:
            return await self._unit(fn)
        async with self._write_lock:
            return await self._unit(fn)

    async def run_schema(self, fn: Callable[[sa.Connection], T]) -> T:
        async with self._write_lock:
            return await self._unit(fn)

    async def close(self) -> None:
        await self._engine.dispose()

    async def _unit(self, fn: Callable[[sa.Connection], T]) -> T:
        async with self._engine.connect() as conn, conn.begin():
            return await conn.run_sync(fn)
