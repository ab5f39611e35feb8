"""Units of work that arrive together share one SQLite transaction, each in a savepoint.

With many chats at once (a thousand new chats posted in one go), most of a unit's cost on
SQLite is not its statements but its transaction: ``BEGIN IMMEDIATE`` and a WAL commit that
writes every page the unit changed (benchmarks/README.md has the figures). Units asked for in the
same turn of the event loop touch the same pages (the end of the messages table, of the event
log, of their indexes), so one commit for all of them writes a fraction of the pages their
separate commits would, and pays the fixed part once (group commit).

What each unit still gets is its own outcome: a unit runs inside ``SAVEPOINT``, so one that
raises is rolled back alone (its caller gets the exception, exactly as if its own transaction
had rolled back), and the others commit. No caller hears of success before the shared commit
is done, so a step is committed before the next model call, as with a transaction of its own
(SPEC O3). A read in a write batch sees the earlier units' rows, which commit with it or,
should the commit fail, reach no caller.

This module runs one batch on a connection whose lock is free; ``engine.SQLiteRunner``
decides when units go together and where a batch runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agentworld.storage.sqlite_direct import DirectConnection

_SAVEPOINT: Final = "SAVEPOINT unit"
_RELEASE: Final = "RELEASE unit"
_ROLL_BACK: Final = "ROLLBACK TO unit"

TAKE_SNAPSHOT: Final = "PRAGMA schema_version"
"""Reads the database header, which starts a read transaction's snapshot."""


@dataclass(slots=True)
class Unit:
    """One unit of work waiting in a batch, and where its caller waits for its outcome."""

    fn: Callable[[DirectConnection], Any]
    write: bool
    outcome: asyncio.Future[Any]


@dataclass(slots=True)
class Batch:
    """Units asked for while one turn of the event loop ran; flushed on the next."""

    units: list[Unit] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Ran:
    """A unit that ran: its value, or the exception it raised (its savepoint rolled back)."""

    value: Any = None
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class BatchDone:
    """The batch committed; ``outcomes`` in the units' order. ``suspect``: some unit failed
    with a database error other than a refused row, so the connection is best replaced."""

    outcomes: list[Ran]
    suspect: bool


@dataclass(frozen=True, slots=True)
class BatchFailed:
    """The batch's transaction as a whole failed (its begin, a savepoint, its commit): no
    unit's work is kept, every caller gets ``error``, and the connection is replaced."""

    error: BaseException


Busy = Literal["busy"]
"""Another connection holds the lock: nothing ran, the units go to the worker."""


def run_batch(direct: DirectConnection, units: Sequence[Unit]) -> BatchDone | BatchFailed | Busy:
    """``units`` in one transaction on ``direct``, asked for with no busy timeout: ``"busy"``
    (having run nothing) when another connection holds the lock."""
    raw = direct.driver_connection
    write = any(unit.write for unit in units)
    try:
        raw.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        if not write:
            raw.execute(TAKE_SNAPSHOT).fetchall()
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:
            _roll_back(raw)
            return "busy"
        return _failed(raw, exc)
    except sqlite3.Error as exc:
        return _failed(raw, exc)
    outcomes: list[Ran] = []
    suspect = False
    try:
        for unit in units:
            raw.execute(_SAVEPOINT)
            try:
                value = unit.fn(direct)
            except Exception as exc:  # the unit's caller gets it
                raw.execute(_ROLL_BACK)
                raw.execute(_RELEASE)
                outcomes.append(Ran(error=exc))
                suspect |= isinstance(exc, sqlite3.Error) and not isinstance(
                    exc, sqlite3.IntegrityError
                )
            else:
                raw.execute(_RELEASE)
                outcomes.append(Ran(value))
        raw.execute("COMMIT")
    except sqlite3.Error as exc:
        return _failed(raw, exc)
    except BaseException:
        _roll_back(raw)
        raise
    return BatchDone(outcomes, suspect)


def _failed(raw: sqlite3.Connection, error: sqlite3.Error) -> BatchFailed:
    _roll_back(raw)
    return BatchFailed(error)


def _roll_back(raw: sqlite3.Connection) -> None:
    if raw.in_transaction:
        with contextlib.suppress(sqlite3.Error):  # the connection is replaced anyway
            raw.execute("ROLLBACK")
