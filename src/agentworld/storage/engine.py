"""Where a unit of storage work runs: a worker thread for SQLite, the async engine for PostgreSQL.

Every storage method is one synchronous function of a ``connection.Connection`` (a
*unit of work*) run inside one transaction, so the SQL is written once for both backends:

* SQLite: the stdlib ``sqlite3`` driver, one connection, whose units run one at a time.
  Statements run on the ``sqlite3`` cursor itself (``sqlite_direct``).
  Between processes, WAL mode and a busy timeout let readers and writers share the file,
  and write units start with ``BEGIN IMMEDIATE``, so a writer waits for the lock up front
  instead of failing half way with "database is locked". A unit runs *in place*, on the
  caller's thread, when it can start at once: nothing is queued before it and the lock is
  free (asked with no busy timeout). In WAL mode a unit that has its lock cannot be made to
  wait again, and with ``synchronous=NORMAL`` a commit does not wait for the disk, so such a
  unit is pure CPU, less than the hop to a thread and back it replaces (benchmarks/README.md
  has the figures). A unit that would have to wait (another
  process holds the write lock) goes to a dedicated worker thread instead, with the busy
  timeout, and every unit after it queues behind it there until the queue is empty, so
  units still run in the order they were asked for. Units asked for together (many chats
  at once: one arrives while another caller's unit is done and that caller has not resumed)
  go into one batch, run on the loop's next turn in one transaction, each in a savepoint
  (``sqlite_batch``): one commit instead of one each, and still each caller's own outcome.
* PostgreSQL: SQLAlchemy's async engine with asyncpg, running the same function through
  ``AsyncConnection.run_sync``. Writes of one process still queue on an ``asyncio.Lock``,
  as they always have, so check-then-insert units stay race-free in one process.

Schema work (``migrations``) needs SQLAlchemy's own connection (``inspect``, ``create``), so it
runs through ``run_schema`` on both backends. On SQLite that is the one time SQLAlchemy is
imported, and only when the schema is not current already (``SQLStorage.open``): the units
themselves run on a ``sqlite3`` connection opened here.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agentworld.storage.checkpoints import Checkpointer
from agentworld.storage.connection import Connection
from agentworld.storage.sqlite_batch import (
    TAKE_SNAPSHOT,
    Batch,
    BatchDone,
    BatchFailed,
    Busy,
    Unit,
    run_batch,
)
from agentworld.storage.sqlite_direct import DirectConnection
from agentworld.storage.url import sqlite_file, sqlite_sync_url

if TYPE_CHECKING:
    import sqlalchemy as sa

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000


class Runner(Protocol):
    """Runs units of work against one database, each in its own transaction."""

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T: ...

    async def run_schema(self, fn: Callable[[sa.Connection], T]) -> T:
        """``fn`` on SQLAlchemy's own connection, in one write transaction."""
        ...

    async def close(self) -> None: ...


def open_runner(url: str, *, echo: bool = False) -> Runner:
    """The runner for a URL from ``resolve_database_url`` (``sqlite`` or ``postgresql+asyncpg``)."""
    if url.startswith("sqlite"):
        return SQLiteRunner(sqlite_sync_url(url), echo=echo)
    from agentworld.storage.async_engine import AsyncEngineRunner

    return AsyncEngineRunner(url, echo=echo)


PAGE_SIZE = 2048
"""Bytes per page of a database this version creates (SQLite's default is 4096)."""


def connect_sqlite(url: str) -> sqlite3.Connection:
    """A ``sqlite3`` connection to the database of a SQLite URL, set up as units need it.

    ``check_same_thread`` is off so units may run in place on the caller's thread, and the
    worker may close it. A URL with options (``?mode=ro``) opens as an SQLite URI with them.
    """
    path, _, options = url.split("://", 1)[1][1:].partition("?")
    if not path or path == ":memory:":
        raw = sqlite3.connect(":memory:", check_same_thread=False)
    elif options:
        raw = sqlite3.connect(f"file:{path}?{options}", uri=True, check_same_thread=False)
    else:
        raw = sqlite3.connect(path, check_same_thread=False)
    try:
        _configure_sqlite_connection(raw)
    except BaseException:
        raw.close()
        raise
    return raw


def _configure_sqlite_connection(dbapi_connection: Any, _record: Any = None) -> None:
    # Take transaction control away from the driver, so ``_unit`` decides how to BEGIN.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    # A new database's page size (an existing one keeps its own): a turn's commit writes every
    # page it changed into the WAL, and it changes a dozen pages to append a few small rows;
    # half-size pages halve those bytes and the checkpoint's copy of them (benchmarks/README.md),
    # while a typical message still fits in one page.
    cursor.execute(f"PRAGMA page_size={PAGE_SIZE}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    # Checkpoints run on a thread of their own (``checkpoints``), not inside a unit's commit.
    cursor.execute("PRAGMA wal_autocheckpoint=0")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class SQLiteRunner:
    """One ``sqlite3`` connection; units run in place when they can, else on a worker thread."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self._url = url
        self._echo = echo
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentworld-db")
        database = sqlite_file(url)
        self._checkpoints = Checkpointer(str(database)) if database is not None else None
        self._conn: sa.Connection | None = None
        """SQLAlchemy's connection for schema work, on the units' own ``sqlite3`` connection."""
        self._direct: DirectConnection | None = None
        """Opened on the worker thread; used by whoever holds ``_guard``."""
        self._guard = threading.Lock()
        """Held while a unit uses the connection, by the worker or by a caller in place."""
        self._queued = 0
        """Units handed to the worker and not finished (under ``_count_lock``). A unit runs
        in place only when this is 0, so none overtakes one asked for before it."""
        self._count_lock = threading.Lock()
        self._in_place = False
        """The connection is open, sound and in WAL (or memory) mode: set on the worker."""
        self._stale = False
        """A unit run in place failed in a way that may have broken the connection: the
        worker opens a new one before its next unit."""
        self._batch: Batch | None = None
        """Units asked for while the loop runs other callers' units: run together next."""
        self._settling = 0
        """Callers whose unit is done and who have not resumed yet. A unit asked for while
        there are any is one of several arriving together, so it joins a batch."""

    async def run(self, fn: Callable[[Connection], T], *, write: bool) -> T:
        batch = self._batch
        if batch is not None:
            return await self._in_batch(batch, fn, write)
        if self._in_place and not self._queued:
            if self._settling:  # others' units are arriving too: one transaction for all
                batch = self._batch = Batch()
                asyncio.get_running_loop().call_soon(self._flush, batch)
                return await self._in_batch(batch, fn, write)
            if self._guard.acquire(blocking=False):
                try:
                    # Asked again under the guard: another thread may have queued work meanwhile.
                    ready = self._in_place and not self._queued
                    outcome = self._unit_in_place(fn, write) if ready else _WAIT
                finally:
                    self._guard.release()
                if outcome is not _WAIT:
                    # Still a suspension point, as the hop to the worker was: a task that only
                    # awaits storage keeps letting the others run.
                    self._settling += 1
                    try:
                        await asyncio.sleep(0)
                    finally:
                        self._settling -= 1
                    return outcome  # type: ignore[return-value]
        return await self._on_worker(self._unit, fn, write)

    async def _in_batch(self, batch: Batch, fn: Callable[[Connection], T], write: bool) -> T:
        outcome: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        batch.units.append(Unit(fn, write, outcome))
        try:
            result = await outcome
        finally:
            if outcome.done() and not outcome.cancelled():
                self._settling -= 1
        if isinstance(result, _Moved):
            return await result.work
        return result

    def _flush(self, batch: Batch) -> None:
        """Run ``batch`` in place in one transaction (``sqlite_batch``), or hand its units to
        the worker in order when they cannot start at once; then tell each caller."""
        if self._batch is batch:
            self._batch = None
        units = [unit for unit in batch.units if not unit.outcome.cancelled()]
        if not units:
            return
        done: BatchDone | BatchFailed | Busy = "busy"
        if self._in_place and not self._queued and self._guard.acquire(blocking=False):
            try:
                if self._in_place and not self._queued:
                    assert self._direct is not None
                    done = run_batch(self._direct, units)
            finally:
                self._guard.release()
        if isinstance(done, str):  # "busy": another connection holds the lock
            for unit in units:
                self._settle(unit, _Moved(self._submit(self._unit, unit.fn, unit.write)))
            return
        if isinstance(done, BatchFailed):
            self._broken()
            for unit in units:
                self._settle(unit, error=done.error)
            return
        if self._checkpoints is not None and any(unit.write for unit in units):
            self._checkpoints.committed()
        if done.suspect:
            self._broken()
        for unit, ran in zip(units, done.outcomes, strict=True):
            self._settle(unit, ran.value, ran.error)

    def _settle(self, unit: Unit, value: Any = None, error: BaseException | None = None) -> None:
        if unit.outcome.done():
            return
        self._settling += 1  # counted down when the caller resumes (``_in_batch``)
        if error is not None:
            unit.outcome.set_exception(error)
        else:
            unit.outcome.set_result(value)

    async def run_schema(self, fn: Callable[[sa.Connection], T]) -> T:
        return await self._on_worker(self._schema_unit, fn)

    async def close(self) -> None:
        if self._batch is not None:
            self._flush(self._batch)
        self._in_place = False
        try:
            await self._on_worker(self._dispose)
        finally:
            # The queue is empty once ``_dispose`` ran, so this only joins an idle thread.
            self._executor.shutdown(wait=True)

    async def _on_worker(self, work: Callable[..., T], *args: Any) -> T:
        return await self._submit(work, *args)

    def _submit(self, work: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        with self._count_lock:
            self._queued += 1
        future = self._executor.submit(self._guarded, work, *args)
        # Counted down when the work is done or cancelled before it started, and before the
        # waiting task wakes, so the unit it asks for next may run in place.
        future.add_done_callback(self._count_down)
        return asyncio.wrap_future(future)

    def _count_down(self, _future: object) -> None:
        with self._count_lock:
            self._queued -= 1

    def _guarded(self, work: Callable[..., T], *args: Any) -> T:
        with self._guard:
            return work(*args)

    def _open(self) -> DirectConnection:
        """The worker's connection, opened (again, if a unit left it stale) when needed."""
        if self._stale:
            self._stale = False
            self._drop(invalidate=True)
        direct = self._direct
        if direct is None:
            raw = connect_sqlite(self._url)
            direct = self._direct = DirectConnection(raw)
            (mode,) = raw.execute("PRAGMA journal_mode").fetchone()
            # In another journal mode a commit may wait for readers, so units stay here.
            self._in_place = str(mode).lower() in ("wal", "memory")
        return direct

    def _schema_connection(self) -> sa.Connection:
        """SQLAlchemy's connection on the units' ``sqlite3`` connection (schema work)."""
        conn = self._conn
        if conn is None:
            import sqlalchemy as sa
            from sqlalchemy.pool import StaticPool

            direct = self._open()
            schema_engine = sa.create_engine(
                "sqlite://",
                echo=self._echo,
                poolclass=StaticPool,
                creator=lambda: direct.driver_connection,
            )
            conn = self._conn = schema_engine.connect()
        return conn

    def _unit(self, fn: Callable[[Connection], T], write: bool) -> T:
        direct = self._open()
        raw = direct.driver_connection
        try:
            raw.execute(_WAIT_FOR_LOCKS)
            raw.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error:
            self._broken()
            raise
        try:
            return self._finish(direct, fn, write)
        finally:
            self._stop_waiting(direct)

    def _stop_waiting(self, direct: DirectConnection) -> None:
        """Between units the connection does not wait for locks, so a unit run in place
        learns at once that it would have to (``_unit_in_place``)."""
        if self._direct is not direct:
            return  # dropped meanwhile
        try:
            direct.driver_connection.execute("PRAGMA busy_timeout=0")
        except sqlite3.Error:
            self._broken()

    def _unit_in_place(self, fn: Callable[[Connection], T], write: bool) -> T | _Wait:
        """``fn`` in a transaction on this thread, or ``_WAIT`` without having run it when
        the lock is taken. A read takes its snapshot up front, so it cannot wait later."""
        direct = self._direct
        assert direct is not None
        raw = direct.driver_connection
        try:  # with no busy timeout (``_stop_waiting``): a lock held elsewhere fails at once
            raw.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            if not write:
                raw.execute(TAKE_SNAPSHOT).fetchall()
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:
                if raw.in_transaction:
                    raw.execute("ROLLBACK")
                return _WAIT
            self._broken()
            raise
        except sqlite3.Error:
            self._broken()
            raise
        return self._finish(direct, fn, write)

    def _finish(self, direct: DirectConnection, fn: Callable[[Connection], T], write: bool) -> T:
        """The rest of a unit whose transaction has begun: ``fn``, then commit or roll back."""
        raw = direct.driver_connection
        try:
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
            self._broken()
            raise

    def _broken(self) -> None:
        """Whatever failed may have left the connection unusable: the next unit runs on the
        worker, which opens a fresh one rather than inherit a broken state."""
        self._in_place = False
        self._stale = True

    def _schema_unit(self, fn: Callable[[sa.Connection], T]) -> T:
        from sqlalchemy.exc import DBAPIError, IntegrityError

        direct = self._open()
        conn = self._schema_connection()
        try:
            direct.driver_connection.execute(_WAIT_FOR_LOCKS)
            with conn.begin():
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                return fn(conn)
        except IntegrityError:
            raise
        except DBAPIError:
            self._broken()
            raise
        finally:
            self._stop_waiting(direct)

    def _drop(self, *, invalidate: bool = False) -> None:
        """Close the units' connection (and schema work's SQLAlchemy one on it); the next
        unit opens another. ``invalidate``: it may be broken, so nothing is rolled back."""
        self._in_place = False
        direct, self._direct = self._direct, None
        conn, self._conn = self._conn, None
        if conn is not None:
            schema_engine = conn.engine
            if invalidate:
                conn.invalidate()
            conn.close()
            schema_engine.dispose()
        if direct is not None:
            direct.driver_connection.close()

    def _dispose(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.close()
        self._drop()


class _Wait:
    """A unit that could not start at once, and so did not run."""


_WAIT = _Wait()

_WAIT_FOR_LOCKS = f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}"
"""Set for a unit on the worker, which may wait for another process's lock."""


@dataclass(frozen=True, slots=True)
class _Moved:
    """A batched unit that could not start at once: it went to the worker, and here is the
    future of its outcome there."""

    work: asyncio.Future[Any]
