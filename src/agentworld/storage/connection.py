"""What a unit of work may do with its connection: the narrow interface the stores are written to.

Every storage method is one synchronous function of a ``Connection``, run in one transaction
(``engine``). Statements are SQL text (``statement.Sql``), written once for both backends;
SQLite runs them on the ``sqlite3`` cursor itself (``sqlite_direct.DirectConnection``),
PostgreSQL through SQLAlchemy (``pg_connection.PgConnection``). Both give back the same
``Rows``, so a store cannot come to depend on one backend's extras.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from agentworld.errors import StorageError
from agentworld.storage.statement import Backend, Sql

Parameters = Mapping[str, Any] | Sequence[Mapping[str, Any]]
"""One row of bind values, or a list of them to run the statement once per row."""


class Row(Protocol):
    """A result row: by position (``row[0]``, unpacking, slices) or by column (``row.name``)."""

    def __getitem__(self, index: Any) -> Any: ...

    def __getattr__(self, name: str) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...


class Rows:
    """What a statement gave back, on either backend: all its rows, read at once, and how
    many rows it changed."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def first(self) -> Any:
        """The first row, or None."""
        return self._rows[0] if self._rows else None

    def all(self) -> list[Any]:
        return self._rows

    def scalar(self) -> Any:
        """The first column of the first row, or None."""
        return self._rows[0][0] if self._rows else None

    def scalar_one(self) -> Any:
        """The first column of the one row there must be."""
        if len(self._rows) != 1:
            found = "no row was" if not self._rows else "several rows were"
            raise StorageError(f"{found} found where the statement must find exactly one")
        return self._rows[0][0]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)


class Connection(Protocol):
    """A connection inside a unit's transaction."""

    @property
    def backend(self) -> Backend:
        """Which database this is, for the few steps that differ (locks)."""
        ...

    def execute(self, statement: Sql, parameters: Parameters | None = None) -> Rows: ...
