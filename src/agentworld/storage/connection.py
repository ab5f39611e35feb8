"""What a unit of work may do with its connection: the narrow interface the stores are written to.

Every storage method is one synchronous function of a ``Connection``, run in one transaction
(``engine``). Statements are SQL text (``statement.Sql``), written once for both backends;
SQLite runs them on the ``sqlite3`` cursor itself (``sqlite_direct.DirectConnection``),
PostgreSQL through SQLAlchemy (``pg_connection.PgConnection``). Only what both give is here,
so a store cannot come to depend on one backend's extras. (Both still run a SQLAlchemy Core
statement, for tests and tools; the stores write none.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agentworld.storage.statement import Backend, Sql

if TYPE_CHECKING:
    from sqlalchemy.sql.base import Executable

Parameters = Mapping[str, Any] | Sequence[Mapping[str, Any]]
"""One row of bind values, or a list of them to run the statement once per row."""


class Row(Protocol):
    """A result row: by position (``row[0]``, unpacking, slices) or by column (``row.name``)."""

    def __getitem__(self, index: Any) -> Any: ...

    def __getattr__(self, name: str) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...


class Result(Protocol):
    """What a statement gave back: its rows (read at once) and how many rows it changed."""

    @property
    def rowcount(self) -> int: ...

    @property
    def inserted_primary_key(self) -> Any: ...

    def first(self) -> Any: ...

    def all(self) -> Sequence[Any]: ...

    def fetchall(self) -> Sequence[Any]: ...

    def scalar(self) -> Any: ...

    def scalar_one(self) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection inside a unit's transaction."""

    @property
    def backend(self) -> Backend:
        """Which database this is, for the few steps that differ (locks, triggers)."""
        ...

    def execute(self, statement: Sql | Executable, parameters: Parameters | None = None) -> Result: ...

    def exec_driver_sql(self, statement: str) -> Result: ...
