"""SQLite units of work run straight on the ``sqlite3`` connection, without SQLAlchemy.

The stores' statements are SQL text (``statement.Sql``). An execution here is the values
given, bound by name by ``sqlite3`` itself (those of JSON parameters serialized first, list
parameters spread into one parameter each), ``cursor.execute``, and the rows read at once into
tuples whose items are also read by column name (``row_type_of``), their JSON and boolean
columns converted. A statement's row type and readers are made at its first execution and kept
on the statement. SQLAlchemy is not imported on this path, so a command on a SQLite database
does not pay for loading it.

This is the one path SQLite statements take; PostgreSQL runs the same text through SQLAlchemy
(``pg_connection``).
"""

from __future__ import annotations

import keyword
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Final

from agentworld.errors import StorageError
from agentworld.storage.connection import Parameters, Rows
from agentworld.storage.statement import READERS, Backend, Sql, json_text

Reader = Callable[[Any], Any]
Readers = tuple[Reader | None, ...]

_NOTHING: Final[Mapping[str, Any]] = {}


def row_type_of(cursor: sqlite3.Cursor) -> type[tuple[Any, ...]]:
    """A tuple type for the cursor's rows whose items are also read by column name
    (``row.seq``), as a named tuple's are, with the same names: a column whose name is not an
    identifier, is a keyword, starts with ``_`` or repeats one is read as ``_<position>``.

    Not ``collections.namedtuple``, which compiles a constructor for each type: every
    statement makes its row type at its first execution, and a row is made by
    ``row_type(values)`` (see benchmarks/README.md for what that saves).
    """
    names: list[str] = []
    for position, column in enumerate(cursor.description):
        name = column[0]
        readable = name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")
        names.append(name if readable and name not in names else f"_{position}")

    def row_repr(row: tuple[Any, ...]) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(names, row, strict=True))
        return f"Row({shown})"

    namespace: dict[str, Any] = {name: property(itemgetter(i)) for i, name in enumerate(names)}
    namespace.update(__slots__=(), __repr__=row_repr)
    return type("Row", (tuple,), namespace)


def result_of(
    cursor: sqlite3.Cursor, row_type: type[tuple[Any, ...]], readers: Readers | None
) -> Rows:
    """The cursor's rows as ``row_type``, each column through its reader (if it has one)."""
    raw_rows = cursor.fetchall()
    if readers is None:
        rows = list(map(row_type, raw_rows))
    else:
        rows = [
            row_type([r(v) if r is not None else v for r, v in zip(readers, raw, strict=True)])
            for raw in raw_rows
        ]
    return Rows(rows, cursor.rowcount)


class _SqlPlan:
    """What a ``Sql`` statement's executions on SQLite need, made at its first execution."""

    __slots__ = ("statement", "json_params", "lists", "row_type", "readers")

    def __init__(self, statement: Sql) -> None:
        self.statement = statement
        self.json_params = statement.json_params
        self.lists = statement.lists
        self.row_type: type[tuple[Any, ...]] | None = None
        self.readers: Readers | None = None

    def values(self, given: Mapping[str, Any]) -> Mapping[str, Any]:
        """The values to bind by name: as given, or a copy with the JSON ones serialized."""
        if not self.json_params:
            return given
        values = dict(given)
        for name in self.json_params:
            if name not in values:
                raise sqlite3.ProgrammingError(f"no value given for parameter :{name}")
            values[name] = json_text(values[name])
        return values

    def expanded(self, given: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
        """The text with each list parameter spread into one parameter per value, and the
        values under those names (an empty list is ``IN ()``, which SQLite allows)."""
        text = self.statement.text
        values = dict(self.values(given))
        for name in self.lists:
            items = list(values.pop(name))
            spread = [f"{name}__{i}" for i in range(len(items))]
            values.update(zip(spread, items, strict=True))
            placeholder = "(" + ", ".join(f":{key}" for key in spread) + ")"
            text = re.sub(rf":{name}\b", placeholder, text)
        return text, values

    def result(self, cursor: sqlite3.Cursor) -> Rows:
        if cursor.description is None:
            return Rows([], cursor.rowcount)
        row_type = self.row_type
        if row_type is None:
            row_type = self.row_type = row_type_of(cursor)
            kinds = self.statement.columns
            readers = tuple(READERS[kinds[c[0]]] if c[0] in kinds else None for c in cursor.description)
            self.readers = readers if any(r is not None for r in readers) else None
        return result_of(cursor, row_type, self.readers)


class DirectConnection:
    """A unit's connection on SQLite (see ``connection.Connection``)."""

    __slots__ = ("_raw",)

    backend: Final[Backend] = "sqlite"

    def __init__(self, raw: sqlite3.Connection) -> None:
        self._raw = raw

    @property
    def driver_connection(self) -> sqlite3.Connection:
        """The ``sqlite3`` connection statements run on (owned by the worker thread)."""
        return self._raw

    def execute(self, statement: Sql, parameters: Parameters | None = None) -> Rows:
        plan: _SqlPlan = statement.sqlite_plan or _plan(statement)
        if parameters.__class__ is not dict and isinstance(parameters, Sequence):
            return self._execute_many(plan, parameters)
        given = parameters or _NOTHING
        if plan.lists:
            text, values = plan.expanded(given)
            return plan.result(self._raw.execute(text, values))
        return plan.result(self._raw.execute(statement.text, plan.values(given)))

    def _execute_many(self, plan: _SqlPlan, rows: Sequence[Mapping[str, Any]]) -> Rows:
        if not rows:
            return Rows([], 0)
        if plan.lists:
            raise StorageError("a statement with list parameters runs one row at a time")
        values = rows if not plan.json_params else [plan.values(row) for row in rows]
        cursor = self._raw.executemany(plan.statement.text, values)
        return Rows([], cursor.rowcount)


def _plan(statement: Sql) -> _SqlPlan:
    plan = statement.sqlite_plan = _SqlPlan(statement)
    return plan
