"""Statements as portable SQL text, with the types of the values that need converting.

Every statement the stores run is one ``Sql``: the SQL as written (``:name`` parameters), which
parameters hold JSON, which result columns are JSON or booleans, which parameters are lists
(``IN :name``), and the PostgreSQL text where the two databases need different words
(``FOR UPDATE``). SQLite runs it on the bare ``sqlite3`` connection (``sqlite_direct``) and
converts those values itself; PostgreSQL runs it as SQLAlchemy text with those types
(``pg_connection``). Nothing here imports SQLAlchemy: a command on a SQLite database never
loads it.

The conversions are SQLAlchemy's own for these types, so rows written by either path read the
same: JSON is ``json.dumps`` of the value (``None`` too, stored as ``null``) and ``json.loads``
back; a boolean column reads as ``bool``. What is written is strict JSON (``strict_json.dumps``:
a ``NaN`` goes in as the string ``"NaN"``), which PostgreSQL's JSON type requires and every
reader of a document can parse.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal

from agentworld import strict_json

Backend = Literal["sqlite", "postgresql"]
ColumnKind = Literal["json", "bool"]
"""A result column that is not read as the driver gives it: JSON text to decode, or SQLite's
0/1 to read as a boolean."""


class Sql:
    """One statement: SQL text and what its values need (see the module's docstring).

    Built once, as module constants, for the statements commands run; a statement whose text
    depends on a call (a list of tables, an optional filter) is built per call, which costs a
    string and nothing more.
    """

    __slots__ = ("text", "postgresql", "json_params", "columns", "lists", "sqlite_plan", "pg_plan")

    def __init__(
        self,
        text: str,
        *,
        json_params: Iterable[str] = (),
        columns: Mapping[str, ColumnKind] | None = None,
        lists: Iterable[str] = (),
        postgresql: str | None = None,
    ) -> None:
        self.text = text
        self.postgresql = text if postgresql is None else postgresql
        """The text PostgreSQL runs: ``text`` unless the two need different words."""
        self.json_params = tuple(json_params)
        """Parameters whose values are stored as JSON text."""
        self.columns: Mapping[str, ColumnKind] = dict(columns or {})
        """Result columns, by name, read as JSON or as booleans."""
        self.lists = tuple(lists)
        """Parameters given as a sequence of values, written ``IN :name`` in the text."""
        self.sqlite_plan: Any = None
        """Set by ``sqlite_direct`` at the first execution: the row type and readers."""
        self.pg_plan: Any = None
        """Set by ``pg_connection``: the SQLAlchemy text clause with these types."""

    def __repr__(self) -> str:
        return f"Sql({self.text!r})"


def json_text(value: Any) -> str:
    """A JSON value as stored (SQLAlchemy's ``JSON`` type on SQLite: ``json.dumps``)."""
    if value is None:
        return _NULL
    if value.__class__ is dict and not value:
        return _EMPTY
    return strict_json.dumps(value)


_NULL: Final = json.dumps(None)
_EMPTY: Final = json.dumps({})


def json_value(stored: Any) -> Any:
    """A JSON column's value as read: the text decoded (``None`` for SQL NULL)."""
    if stored is None or stored.__class__ is not str:
        return stored
    return json.loads(stored)


def boolean(stored: Any) -> bool | None:
    """A boolean column's value as read (SQLite stores 0 and 1)."""
    return None if stored is None else bool(stored)


READERS: Final[Mapping[ColumnKind, Callable[[Any], Any]]] = {"json": json_value, "bool": boolean}
