"""What every part of the SQL store shares: the connection runner and ``in_transaction``."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from agentworld.errors import AlreadyExistsError, StorageError
from agentworld.storage.connection import Connection
from agentworld.storage.engine import Runner
from agentworld.storage.faults import server_of, unavailable
from agentworld.storage.url import sqlite_file

if TYPE_CHECKING:
    import sqlalchemy as sa

T = TypeVar("T")


class StorageCore:
    """The runner and the transaction helper; the store's parts build on ``in_transaction``."""

    url: str
    _runner: Runner | None

    async def in_transaction(
        self, fn: Callable[[Connection], T], *, write: bool, duplicate: str | None = None
    ) -> T:
        """Run one unit of work in one transaction (``BEGIN IMMEDIATE`` for SQLite writes).

        Commits when ``fn`` returns, rolls back when it raises. A refused row (a constraint)
        becomes ``AlreadyExistsError(duplicate)`` when the caller says what a duplicate means,
        else, like every other database error, a one-line ``StorageError`` naming the database
        — never SQLAlchemy's message, which carries the SQL and its parameters.
        """
        runner = self._runner
        if runner is None:
            raise StorageError("storage is not open")
        return await self._mapping_errors(runner.run(fn, write=write), duplicate)

    async def in_schema_transaction(self, fn: Callable[[sa.Connection], T]) -> T:
        """``fn`` on SQLAlchemy's own connection (``inspect``, ``create``), in one write
        transaction: for schema work, which the units' narrower ``Connection`` cannot do."""
        runner = self._runner
        if runner is None:
            raise StorageError("storage is not open")
        return await self._mapping_errors(runner.run_schema(fn), None)

    async def _mapping_errors(self, work: Awaitable[T], duplicate: str | None) -> T:
        try:
            return await work
        except sqlite3.IntegrityError as exc:
            raise self._refused(exc, duplicate) from exc
        except sqlite3.Error as exc:
            raise StorageError(f"database error ({self._where()}): {exc}") from exc
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            # Units read only what the stores wrote: text that is not UTF-8, or a JSON column
            # that does not parse, means the file was damaged (or written by something else).
            raise StorageError(
                f"database damaged ({self._where()}): a stored value cannot be read ({exc})"
            ) from exc
        except Exception as exc:
            if (lost := unavailable(exc, self.url)) is not None:
                raise lost from exc  # the server refused, reset, dropped or never answered
            # SQLAlchemy's errors (PostgreSQL, schema work), looked for only where it is loaded:
            # the SQLite path raises the driver's own.
            sa_errors = sys.modules.get("sqlalchemy.exc")
            if sa_errors is None or not isinstance(exc, sa_errors.SQLAlchemyError):
                raise
            if isinstance(exc, sa_errors.IntegrityError):
                raise self._refused(exc, duplicate) from exc
            # The driver's own message is one line; SQLAlchemy's adds the SQL and a link.
            raise StorageError(f"database error ({self._where()}): {_driver(exc)}") from exc

    def _refused(self, exc: BaseException, duplicate: str | None) -> Exception:
        if duplicate is not None:
            return AlreadyExistsError(duplicate)
        return StorageError(f"database refused a row ({self._where()}): {_driver(exc)}")

    def _where(self) -> str:
        path = sqlite_file(self.url)
        return str(path) if path else server_of(self.url)

    @property
    def commits_in_seq_order(self) -> bool:
        """True when rows become visible in ``seq`` order (SQLite's single writer), so a
        reader may keep what it has read and ask only for rows after the last seq it saw."""
        return self.url.startswith("sqlite")


def _driver(exc: BaseException) -> BaseException:
    """The driver's own exception: SQLAlchemy wraps it (``orig``), the SQLite path does not;
    an error of SQLAlchemy's own has none, and is its own message."""
    orig = getattr(exc, "orig", None)
    return orig if isinstance(orig, BaseException) else exc
