"""The SQLite connection binds each statement's values itself (``sqlite_direct._Slot``)
instead of asking SQLAlchemy's ``construct_params`` on every execution. These hold the two
equal, statement by statement, on a real SQLite file: what the direct path reads back is
what SQLAlchemy's own execution of the same statement reads back."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import InvalidRequestError

from agentworld.models import World
from agentworld.storage.engine import PAGE_SIZE
from agentworld.storage.sql import SQLStorage
from agentworld.storage.sqlite_direct import DirectConnection

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


def _both(
    engine: sa.Engine, direct: DirectConnection, statement: sa.Executable, params: dict[str, Any] | None
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with engine.connect() as conn:
        theirs = [tuple(row) for row in conn.execute(statement, params)]
    ours = [tuple(row) for row in direct.execute(statement, params)]
    return ours, theirs


@pytest.mark.parametrize(
    ("statement", "params"),
    [
        # a literal compared to: its value is the statement's own
        (_SELECT.where(_ITEMS.c.world == "w"), None),
        (_SELECT.where(_ITEMS.c.done.is_(True), _ITEMS.c.world == "w"), {}),
        # given under the parameter's key
        (_SELECT.where(_ITEMS.c.world == sa.bindparam("world_key")), {"world_key": "v"}),
        # one parameter used twice
        (
            _SELECT.where(
                sa.or_(_ITEMS.c.world == sa.bindparam("k"), _ITEMS.c.label == sa.bindparam("k"))
            ),
            {"k": "a"},
        ),
        # a name SQLAlchemy escapes when it renders it
        (_SELECT.where(_ITEMS.c.world == sa.bindparam("the world")), {"the world": "w"}),
        # a value computed when the statement runs
        (_SELECT.where(_ITEMS.c.world == sa.bindparam("w", callable_=lambda: "v")), None),
        # a JSON value and a boolean through their types' bind processors
        (_SELECT.where(_ITEMS.c.done == sa.bindparam("done")), {"done": True}),
        (_SELECT.where(_ITEMS.c.data == sa.bindparam("data", type_=sa.JSON)), {"data": {"n": 1}}),
        # a value set on the statement with .params(), and one given over it
        (_SELECT.where(_ITEMS.c.world == sa.bindparam("wk")).params(wk="v"), None),
        (_SELECT.where(_ITEMS.c.world == sa.bindparam("wk")).params(wk="v"), {"wk": "w"}),
        # a limit given as a parameter
        (_SELECT.limit(sa.bindparam("n")), {"n": 2}),
        # several values given, one through its binder (the plan's itemgetter path)
        (
            _SELECT.where(_ITEMS.c.done == sa.bindparam("done"), _ITEMS.c.world == sa.bindparam("wk")),
            {"done": True, "wk": "w"},
        ),
        # a value given beside a literal of the statement's own
        (_SELECT.where(_ITEMS.c.world == sa.bindparam("wk"), _ITEMS.c.label != "zzz"), {"wk": "w"}),
        # literals only, one of them a limit
        (_SELECT.where(_ITEMS.c.label != "zzz").limit(2), {}),
        # a literal JSON value and a boolean, bound once, beside a given value
        (
            _SELECT.where(
                _ITEMS.c.data != sa.literal({"n": 2}, sa.JSON), _ITEMS.c.done.is_not(False),
                _ITEMS.c.world == sa.bindparam("wk"),
            ),
            {"wk": "w"},
        ),
    ],
)
def test_a_read_binds_what_sqlalchemy_binds(
    engine: sa.Engine, direct: DirectConnection, statement: sa.Select[Any], params: dict[str, Any] | None
) -> None:
    ours, theirs = _both(engine, direct, statement, params)
    assert theirs  # each case selects something, so a wrong value cannot pass unseen
    assert ours == theirs


def test_writes_bind_by_column_key_one_row_and_many(
    engine: sa.Engine, direct: DirectConnection
) -> None:
    direct.execute(_ITEMS.insert(), {"world": "x", "label": "one", "done": True, "data": {"k": [1]}})
    direct.execute(
        _ITEMS.insert(),
        [
            {"world": "x", "label": "two", "done": False, "data": None},
            {"world": "x", "label": "three", "done": True, "data": "s"},
            {"world": "x", "label": "four", "done": True, "data": {}},
        ],
    )
    changed = direct.execute(
        _ITEMS.update().where(_ITEMS.c.label == sa.bindparam("old")).values(label=sa.bindparam("new")),
        {"old": "two", "new": "2"},
    )
    direct.driver_connection.commit()
    assert changed.rowcount == 1
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(_SELECT.where(_ITEMS.c.world == "x"))]
    assert rows == [("one", True, {"k": [1]}), ("2", False, None), ("three", True, "s"), ("four", True, {})]


@pytest.mark.parametrize(
    "params",
    [
        {"wk": "w"},
        {"wk": "w", "label": "given"},  # a value given under the literal's own name wins
        {"wk": "w", "done": False},  # and a column the statement does not set
    ],
)
def test_an_update_with_literals_writes_what_sqlalchemy_writes(
    engine: sa.Engine, direct: DirectConnection, tmp_path: Path, params: dict[str, Any]
) -> None:
    statement = (
        _ITEMS.update()
        .where(_ITEMS.c.world == sa.bindparam("wk"), _ITEMS.c.label != "zzz")
        .values(label="literal", data={})
    )
    database = engine.url.database
    assert database is not None
    theirs_file = tmp_path / "theirs.db"
    with closing(sqlite3.connect(database)) as source, closing(sqlite3.connect(theirs_file)) as copy:
        source.backup(copy)
    theirs_engine = sa.create_engine(f"sqlite:///{theirs_file}")
    with theirs_engine.begin() as conn:
        theirs_count = conn.execute(statement, params).rowcount
    ours_count = direct.execute(statement, params).rowcount
    direct.driver_connection.commit()

    everything = sa.select(_ITEMS).order_by(_ITEMS.c.id)
    with engine.connect() as ours_conn, theirs_engine.connect() as theirs_conn:
        ours = [tuple(r) for r in ours_conn.execute(everything)]
        theirs = [tuple(r) for r in theirs_conn.execute(everything)]
    theirs_engine.dispose()
    assert ours_count == theirs_count >= 1
    assert ours == theirs
    assert ("literal" if "label" not in params else "given", {}) in [(r[2], r[4]) for r in ours]


def test_a_required_value_not_given_is_the_error_sqlalchemy_raises(
    engine: sa.Engine, direct: DirectConnection
) -> None:
    statement = _SELECT.where(_ITEMS.c.world == sa.bindparam("world_key"))
    compiled = statement.compile(dialect=engine.dialect)
    with pytest.raises(InvalidRequestError) as theirs:
        compiled.construct_params({"other": 1})
    with pytest.raises(InvalidRequestError) as ours:
        direct.execute(statement, {"other": 1})
    assert str(theirs.value).startswith("A value is required for bind parameter 'world_key'")
    assert str(ours.value) == str(theirs.value).split(" (Background")[0]


def test_an_in_list_still_expands_to_the_values_given(
    engine: sa.Engine, direct: DirectConnection
) -> None:
    statement = _SELECT.where(_ITEMS.c.label.in_(sa.bindparam("labels", expanding=True)))
    ours, theirs = _both(engine, direct, statement, {"labels": ["a", "b"]})
    assert len(ours) == 2
    assert ours == theirs


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


# -- SQL text: run as written, ``sqlite3`` binding its parameters by name --------------------

_TEXT_SELECT = "SELECT label, done, data FROM items WHERE world = :wk ORDER BY id"
_TYPED = {"label": sa.String, "done": sa.Boolean, "data": sa.JSON}


@pytest.mark.parametrize(
    ("statement", "params"),
    [
        (sa.text(_TEXT_SELECT), {"wk": "w"}),
        # result columns through their types' processors: a boolean, a JSON document
        (sa.text(_TEXT_SELECT).columns(**_TYPED), {"wk": "w"}),
        # a JSON value bound through its type, one parameter used twice, a value given
        # that the statement does not use
        (
            sa.text("SELECT label, data FROM items WHERE data = :d OR label = :l OR label = :l")
            .bindparams(sa.bindparam("d", type_=sa.JSON))
            .columns(label=sa.String, data=sa.JSON),
            {"d": [1, "two"], "l": "a", "unused": 3},
        ),
        # a value set on the statement: compiled as before, not bound by name
        (sa.text(_TEXT_SELECT).bindparams(wk="v").columns(**_TYPED), None),
    ],
)
def test_sql_text_reads_what_sqlalchemy_reads(
    engine: sa.Engine, direct: DirectConnection, statement: sa.Executable, params: dict[str, Any] | None
) -> None:
    ours, theirs = _both(engine, direct, statement, params)
    assert theirs
    assert ours == theirs


def test_sql_text_writes_one_row_and_many_with_typed_values(
    engine: sa.Engine, direct: DirectConnection
) -> None:
    insert = sa.text(
        "INSERT INTO items (world, label, done, data) VALUES (:world, :label, :done, :data)"
    ).bindparams(sa.bindparam("data", type_=sa.JSON), sa.bindparam("done", type_=sa.Boolean))
    returning = sa.text(f"{insert.text} RETURNING id").bindparams(*insert._bindparams.values())
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
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(_SELECT.where(_ITEMS.c.world == "x"))]
    assert rows == [("one", True, {"k": [1]}), ("two", False, None), ("three", True, {})]


def test_sql_text_missing_a_value_is_the_error_sqlalchemy_raises(
    direct: DirectConnection,
) -> None:
    with pytest.raises(InvalidRequestError, match="A value is required for bind parameter 'wk'"):
        direct.execute(sa.text(_TEXT_SELECT), {"other": 1})


def test_a_row_is_read_by_position_and_by_column_name_as_a_named_tuple_is(
    direct: DirectConnection,
) -> None:
    """Rows are tuples whose items are also read by column name; a name a named tuple would
    rename (not an identifier, a keyword, a leading ``_``, a repeat) is read as ``_<position>``."""
    from agentworld.storage.statement import Sql

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
