"""SQLite statements run on the ``sqlite3`` cursor itself (``sqlite_direct``): ``Sql`` text with
its parameters bound by name, JSON and boolean values converted as SQLAlchemy's own types convert
them. These hold the two equal on a real SQLite file: what the direct path reads back is what
SQLAlchemy reads back from the same rows, and what it writes SQLAlchemy reads as written."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from agentworld.models import World
from agentworld.storage.engine import PAGE_SIZE
from agentworld.storage.sql import SQLStorage
from agentworld.storage.sqlite_direct import DirectConnection
from agentworld.storage.statement import Sql

_META = sa.MetaData()
_ITEMS = sa.Table(
    "items",
    _META,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("world", sa.String, nullable=False),
    sa.Column("label", sa.String),
    sa.Column("done", sa.Boolean, nullable=False, default=False),
    sa.Column("data", sa.JSON),
)

_ROWS = [
    {"world": "w", "label": "a", "done": False, "data": {"n": 1}},
    {"world": "w", "label": "b", "done": True, "data": [1, "two"]},
    {"world": "v", "label": None, "done": True, "data": None},
]

_SELECT = sa.select(_ITEMS.c.label, _ITEMS.c.done, _ITEMS.c.data).order_by(_ITEMS.c.id)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'direct.db'}")
    _META.create_all(engine)
    with engine.begin() as conn:
        conn.execute(_ITEMS.insert(), _ROWS)
    yield engine
    engine.dispose()


@pytest.fixture
def direct(engine: sa.Engine) -> Iterator[DirectConnection]:
    database = engine.url.database
    assert database is not None
    raw = sqlite3.connect(database)
    yield DirectConnection(raw)
    raw.close()



_TEXT_SELECT = "SELECT label, done, data FROM items WHERE world = :wk ORDER BY id"
_TYPED = {"label": sa.String, "done": sa.Boolean, "data": sa.JSON}


def _theirs(engine: sa.Engine, statement: Any, params: dict[str, Any] | None) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(statement, params)]


@pytest.mark.parametrize(
    ("ours", "theirs", "params"),
    [
        (Sql(_TEXT_SELECT), sa.text(_TEXT_SELECT), {"wk": "w"}),
        # result columns read as their types read them: a boolean, a JSON document
        (
            Sql(_TEXT_SELECT, columns={"done": "bool", "data": "json"}),
            sa.text(_TEXT_SELECT).columns(**_TYPED),
            {"wk": "w"},
        ),
        # a JSON value bound as its type binds it, one parameter used twice, a value given
        # that the statement does not use
        (
            Sql(
                "SELECT label, data FROM items WHERE data = :d OR label = :l OR label = :l",
                json_params=("d",),
                columns={"data": "json"},
            ),
            sa.text("SELECT label, data FROM items WHERE data = :d OR label = :l OR label = :l")
            .bindparams(sa.bindparam("d", type_=sa.JSON))
            .columns(label=sa.String, data=sa.JSON),
            {"d": [1, "two"], "l": "a", "unused": 3},
        ),
    ],
)
def test_sql_text_reads_what_sqlalchemy_reads(
    engine: sa.Engine, direct: DirectConnection, ours: Sql, theirs: Any, params: dict[str, Any]
) -> None:
    expected = _theirs(engine, theirs, params)
    assert expected
    assert [tuple(row) for row in direct.execute(ours, params)] == expected


def test_sql_text_writes_one_row_and_many_as_sqlalchemy_reads_them(
    engine: sa.Engine, direct: DirectConnection
) -> None:
    text = "INSERT INTO items (world, label, done, data) VALUES (:world, :label, :done, :data)"
    insert = Sql(text, json_params=("data",))
    returning = Sql(f"{text} RETURNING id", json_params=("data",))
    first = direct.execute(returning, {"world": "x", "label": "one", "done": True, "data": {"k": [1]}})
    many = direct.execute(
        insert,
        [
            {"world": "x", "label": "two", "done": False, "data": None},
            {"world": "x", "label": "three", "done": True, "data": {}},
        ],
    )
    direct.driver_connection.commit()
    assert first.scalar() == 4  # after the three rows of the fixture
    assert many.rowcount == 2
    rows = _theirs(engine, _SELECT.where(_ITEMS.c.world == "x"), None)
    assert rows == [("one", True, {"k": [1]}), ("two", False, None), ("three", True, {})]


def test_a_list_parameter_expands_to_the_values_given(direct: DirectConnection) -> None:
    statement = Sql("SELECT label FROM items WHERE label IN :labels ORDER BY id", lists=("labels",))
    assert [row.label for row in direct.execute(statement, {"labels": ["a", "b"]})] == ["a", "b"]
    assert direct.execute(statement, {"labels": []}).all() == []


def test_a_value_not_given_is_the_drivers_error(direct: DirectConnection) -> None:
    with pytest.raises(sqlite3.ProgrammingError):
        direct.execute(Sql(_TEXT_SELECT), {"other": 1})
    with pytest.raises(sqlite3.ProgrammingError, match=":data"):
        direct.execute(Sql("SELECT :data", json_params=("data",)), {})


async def test_a_new_database_has_small_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    with closing(sqlite3.connect(old)) as made:  # as an earlier version made it: 4 KiB pages
        made.execute("PRAGMA page_size=4096")
        made.execute("PRAGMA journal_mode=WAL")
    for path in (tmp_path / "new.db", old):
        async with SQLStorage(f"sqlite:///{path}") as storage:
            await storage.create_world(World(name="w"))
            assert [w.name for w in await storage.list_worlds()] == ["w"]
    sizes = {}
    for path in (tmp_path / "new.db", old):
        with closing(sqlite3.connect(path)) as conn:
            sizes[path.name] = conn.execute("PRAGMA page_size").fetchone()[0]
    assert sizes == {"new.db": PAGE_SIZE, "old.db": 4096}
    assert PAGE_SIZE == 2048


def test_a_row_is_read_by_position_and_by_column_name_as_a_named_tuple_is(
    direct: DirectConnection,
) -> None:
    """Rows are tuples whose items are also read by column name; a name a named tuple would
    rename (not an identifier, a keyword, a leading ``_``, a repeat) is read as ``_<position>``."""
    statement = Sql(
        "SELECT label, done, max(id), id AS 'class', id AS _hidden, label, data FROM items"
        " WHERE world = :wk GROUP BY label ORDER BY label",
        columns={"done": "bool", "data": "json"},
    )
    rows = direct.execute(statement, {"wk": "w"}).all()
    assert rows == [("a", False, 1, 1, 1, "a", {"n": 1}), ("b", True, 2, 2, 2, "b", [1, "two"])]
    first = rows[0]
    assert (first.label, first.done, first.data) == ("a", False, {"n": 1})
    assert (first._2, first._3, first._4, first._5) == (1, 1, 1, "a")
    assert not hasattr(first, "class")  # renamed: a keyword is no attribute to read
    assert repr(first) == "Row(label='a', done=False, _2=1, _3=1, _4=1, _5='a', data={'n': 1})"
    with pytest.raises(AttributeError):
        first.label = "changed"  # type: ignore[misc]
