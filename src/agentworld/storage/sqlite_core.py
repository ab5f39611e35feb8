"""SQLAlchemy Core statements run on the bare ``sqlite3`` connection: compiled once each.

The stores write their statements as SQL text (``statement.Sql``), which ``sqlite_direct``
runs without SQLAlchemy. A Core statement (a test's, a tool's) still runs on a unit's
connection: this module compiles it with SQLAlchemy's SQLite dialect, once per statement, and
keeps what its executions need. What is left out is the work SQLAlchemy does on every
execution -- an execution context, parameter processing, a result proxy: an execution here
is the bind values in the compiled order, each through its type's bind processor (JSON to
text, booleans to integers), ``cursor.execute``, and the rows through their columns' result
processors. It is imported the first time a Core statement runs, never by the stores' own work.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import sqlalchemy as sa
from sqlalchemy import JSON
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.exc import InvalidRequestError
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import BindParameter, TextClause
from sqlalchemy.sql.selectable import TextualSelect

from agentworld.storage.connection import Parameters
from agentworld.storage.sqlite_direct import DirectResult, result_of, row_type_of

Processor = Callable[[Any], Any]

_NOTHING: Mapping[str, Any] = {}

CACHE_LIMIT = 512
"""Compiled statements kept. The stores' hot statements are built once at import, so they
stay; statements built per call (rarer commands) come and go."""

@dataclass(frozen=True, slots=True)
class _Slot:
    """One ``?`` of a compiled statement: the keys its value is given under, the bind
    parameter that holds its value when none is given, and its type's bind processor."""

    key: str
    name: str
    bind: BindParameter[Any]
    binder: Processor | None

    def value(self, given: Mapping[str, Any]) -> Any:
        """The value bound, as ``SQLCompiler.construct_params`` finds it: given under the
        parameter's key or its compiled name, else the statement's own (a literal compared
        to, a callable), and a required parameter without one is an error."""
        if self.key in given:
            value = given[self.key]
        elif self.name in given:
            value = given[self.name]
        elif self.bind.required:
            raise InvalidRequestError(f"A value is required for bind parameter {self.key!r}")
        else:
            value = self.bind.effective_value if self.bind.callable else self.bind.value
        return value if self.binder is None else self.binder(value)


@dataclass(slots=True)
class _Plan:
    """A statement compiled for SQLite, with what its executions need."""

    compiled: SQLCompiler | None
    """None for SQL text run as written (``_bound_by_name``)."""
    sql: str
    names: tuple[str, ...]
    binders: dict[str, Processor]
    readers: tuple[Processor | None, ...] | None
    """Per result column; None when no column needs converting."""
    expanding: bool
    """An ``IN`` list bound at execution: the SQL depends on the values' count."""
    slots: tuple[_Slot, ...] | None
    """The values in order, read straight from the parameters given; None where only
    ``construct_params`` knows (an expanding list, parameters set with ``.params()``)."""
    take: Callable[[Mapping[str, Any]], Sequence[Any] | Mapping[str, Any]] | None = None
    """The values straight from a dict given under the slots' keys (C-level ``itemgetter``,
    then the binders); None where some slot may fall back to a default or another name.
    Raises ``KeyError`` when a key is missing, for ``values`` to sort out."""
    row_type: Any = field(default=None)
    """A named tuple of the result's columns, made at the first execution that has rows."""

    @property
    def compiler(self) -> SQLCompiler:
        """The compiled statement, consulted by plans without ``slots`` (never SQL text's)."""
        assert self.compiled is not None
        return self.compiled

    def values(self, given: Mapping[str, Any]) -> Sequence[Any] | Mapping[str, Any]:
        """The ``?`` values in order (``slots`` is set), or by name for SQL text."""
        take = self.take
        if take is not None:
            try:
                return take(given)
            except KeyError:
                pass  # under the compiled name, or missing: the slots know which
        assert self.slots is not None
        return [slot.value(given) for slot in self.slots]


class StatementCache:
    """Compiled plans by statement object (and, for INSERT/UPDATE, the parameter names,
    which decide the columns SQLAlchemy writes)."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._fixed: dict[int, tuple[Executable, _Plan]] = {}
        """Statements that write no columns: one plan each, found by the statement alone."""
        self._by_names: dict[int, tuple[Executable, dict[tuple[str, ...] | None, _Plan]]] = {}
        """Statements that write columns (INSERT, UPDATE): a plan per set of parameter names,
        found by the names in the order given (and in sorted order, so another order of the
        same names shares the plan): sorting them cost every execution."""
        self._count = 0

    def plan(self, statement: Executable, first: Mapping[str, Any] | None) -> _Plan:
        fixed = self._fixed.get(id(statement))
        if fixed is not None and fixed[0] is statement:
            return fixed[1]
        writer = self._by_names.get(id(statement))
        if writer is not None and writer[0] is statement:
            plan = writer[1].get(tuple(first) if first else None)
            if plan is not None:
                return plan
        return self._add(statement, first)

    def _add(self, statement: Executable, first: Mapping[str, Any] | None) -> _Plan:
        if self._count >= CACHE_LIMIT:
            self._fixed.clear()
            self._by_names.clear()
            self._count = 0
        # The statement is kept with its plans, so its id cannot be reused while cached.
        if not _writes_columns(statement):
            plan = self._compile(statement, None)
            self._fixed[id(statement)] = (statement, plan)
            self._count += 1
            return plan
        writer = self._by_names.get(id(statement))
        if writer is None or writer[0] is not statement:
            writer = self._by_names[id(statement)] = (statement, {})
        plans = writer[1]
        names = tuple(sorted(first)) if first else None
        plan = plans.get(names) or self._compile(statement, names)
        plans[names] = plans[tuple(first) if first else None] = plan
        self._count += 1
        return plan

    def _compile(self, statement: Executable, keys: tuple[str, ...] | None) -> _Plan:
        dialect = self.dialect
        text = _bound_by_name(statement)
        if text is not None:
            return self._text_plan(statement, text)
        compiled = statement.compile(dialect=dialect, column_keys=list(keys or ()))  # type: ignore[attr-defined]
        assert isinstance(compiled, SQLCompiler)
        binders = _binders(compiled.binds, dialect)
        names = tuple(compiled.positiontup or ())
        expanding = bool(compiled.post_compile_params)
        slots = None if expanding else _slots(compiled, names, binders)
        return _Plan(
            compiled=compiled,
            sql=compiled.string,
            names=names,
            binders=binders,
            readers=_readers(statement, dialect),
            expanding=expanding,
            slots=slots,
            take=_taker(slots) if slots is not None else None,
        )

    def _text_plan(self, statement: Executable, text: TextClause) -> _Plan:
        """A plan for SQL text that ``sqlite3`` binds by name: nothing compiled, the values
        given passed on as they are, but those of typed parameters through their binders."""
        binders = _binders(text._bindparams, self.dialect)
        return _Plan(
            compiled=None,
            sql=text.text,
            names=(),
            binders=binders,
            readers=_readers(statement, self.dialect),
            expanding=False,
            slots=(),
            take=_by_name(frozenset(text._bindparams), tuple(binders.items())),
        )


def _binders(binds: Mapping[str, BindParameter[Any]], dialect: Dialect) -> dict[str, Processor]:
    """The bind processor of each parameter whose type has one, by the parameter's name."""
    binders: dict[str, Processor] = {}
    for name, bind in binds.items():
        processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if processor is not None:
            binders[name] = _json_binder(processor) if isinstance(bind.type, JSON) else processor
    return binders


def _readers(statement: Executable, dialect: Dialect) -> tuple[Processor | None, ...] | None:
    """The result processor of each of the statement's columns; None when none needs one."""
    columns = getattr(statement, "exported_columns", ())
    readers = tuple(c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns)
    return readers if any(r is not None for r in readers) else None


def _bound_by_name(statement: Executable) -> TextClause | None:
    """The SQL text of ``statement`` when ``sqlite3`` can run it as written: text whose every
    parameter is a value the caller gives (no default, no list to expand); else None, and the
    statement is compiled like any other."""
    text = statement.element if isinstance(statement, TextualSelect) else statement
    if not isinstance(text, TextClause):
        return None
    for bind in text._bindparams.values():
        if not bind.required or bind.expanding or bind.literal_execute:
            return None
    return text


def _by_name(
    names: frozenset[str], binders: tuple[tuple[str, Processor], ...]
) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """The values of a text statement, for ``sqlite3`` to bind by name: as given, or a copy with
    the typed ones converted. One not given is SQLAlchemy's error, as for a compiled statement."""

    def take(given: Mapping[str, Any]) -> Mapping[str, Any]:
        if not names.issubset(given):
            missing = min(names.difference(given))
            raise InvalidRequestError(f"A value is required for bind parameter {missing!r}")
        if not binders:
            return given
        values = dict(given)
        for name, binder in binders:
            values[name] = binder(values[name])
        return values

    return take


def _json_binder(processor: Processor) -> Processor:
    """A JSON column's bind processor, with the values most rows carry -- no tool calls
    (``None``), an empty payload (``{}``) -- serialized once, here, by that processor."""
    null, empty = processor(None), processor({})

    def bind(value: Any) -> Any:
        if value is None:
            return null
        if value.__class__ is dict and not value:
            return empty
        return processor(value)

    return bind


def _slots(
    compiled: SQLCompiler, names: tuple[str, ...], binders: Mapping[str, Processor]
) -> tuple[_Slot, ...] | None:
    # Parameters set with ``.params()`` are collected by the compiler (SQLAlchemy 2.1; 2.0
    # copies them into the statement's own binds, which the slots read).
    if getattr(compiled, "_collected_params", None):
        return None
    # The positions name the parameters unescaped (``the world``, not ``the_world``).
    bound = {name: bind for bind, name in compiled.bind_names.items()}
    if any(name not in bound for name in names):
        return None
    return tuple(_Slot(bound[name].key, name, bound[name], binders.get(name)) for name in names)


def _taker(slots: tuple[_Slot, ...]) -> Callable[[Mapping[str, Any]], Sequence[Any]] | None:
    """The fast way to read ``slots``' values, when every one of them is a value the caller
    must give (no default to fall back to): one ``itemgetter`` over their keys, then each
    binder on its own position. Most of a turn's statements are like that; the rest mostly
    hold literals as well (``_taker_with_literals``)."""
    if any(not slot.bind.required for slot in slots):
        return _taker_with_literals(slots)
    keys = [slot.key for slot in slots]
    if not keys:
        return lambda _given: ()
    get = itemgetter(*keys)
    if len(keys) == 1:
        (binder,) = [slot.binder for slot in slots]
        if binder is None:
            return lambda given: (get(given),)
        return lambda given: (binder(get(given)),)
    bound = tuple((i, slot.binder) for i, slot in enumerate(slots) if slot.binder is not None)
    if not bound:
        return get
    def take(given: Mapping[str, Any]) -> list[Any]:
        values = list(get(given))
        for i, binder in bound:
            values[i] = binder(values[i])
        return values
    return take


def _taker_with_literals(
    slots: tuple[_Slot, ...],
) -> Callable[[Mapping[str, Any]], Sequence[Any]] | None:
    """``_taker`` for slots of which some hold a value written into the statement (a literal:
    ``!= 0``, ``LIMIT 1``), bound once here. A caller may still give such a slot's value
    under its key or name, which wins (as ``_Slot.value`` has it): then this raises
    ``KeyError`` and the slots decide. None when a default is computed per execution."""
    if any(slot.bind.callable for slot in slots):
        return None
    template: list[Any] = [None] * len(slots)
    wanted: list[tuple[int, str, Processor | None]] = []
    overridden: set[str] = set()
    for i, slot in enumerate(slots):
        if slot.bind.required:
            wanted.append((i, slot.key, slot.binder))
        else:
            value = slot.bind.value
            template[i] = value if slot.binder is None else slot.binder(value)
            overridden.update((slot.key, slot.name))

    def take(given: Mapping[str, Any]) -> list[Any]:
        if not overridden.isdisjoint(given):
            raise KeyError("a literal given a value")
        values = template.copy()
        for i, key, binder in wanted:
            value = given[key]
            values[i] = value if binder is None else binder(value)
        return values

    return take


def _writes_columns(statement: Executable) -> bool:
    return bool(getattr(statement, "is_insert", False) or getattr(statement, "is_update", False))



def execute_core(
    raw: sqlite3.Connection, cache: StatementCache, statement: Executable, parameters: Parameters | None
) -> DirectResult:
    """``statement`` (SQLAlchemy Core) on ``raw``, compiled once by ``cache``."""
    if parameters.__class__ is not dict and isinstance(parameters, Sequence):
        return _execute_many(raw, cache, statement, parameters)
    plan = cache.plan(statement, parameters)
    if plan.expanding:
        state = plan.compiler.construct_expanded_state(parameters)
        sql, names, values = state.statement, state.positiontup or (), state.parameters
        binders = {**plan.binders, **state.processors}
    elif plan.slots is not None:
        cursor = raw.execute(plan.sql, plan.values(parameters or _NOTHING))
        return _result(plan, cursor)
    else:
        sql, names, binders = plan.sql, plan.names, plan.binders
        values = plan.compiler.construct_params(parameters)
    cursor = raw.execute(sql, _ordered(names, values, binders))
    return _result(plan, cursor)


def _execute_many(
    raw: sqlite3.Connection, cache: StatementCache, statement: Executable, rows: Sequence[Mapping[str, Any]]
) -> DirectResult:
    if not rows:
        return DirectResult([], 0, None)
    plan = cache.plan(statement, rows[0])
    if plan.slots is not None:
        values = [plan.values(row) for row in rows]
    else:
        construct, names, binders = plan.compiler.construct_params, plan.names, plan.binders
        values = [_ordered(names, construct(row), binders) for row in rows]
    cursor = raw.executemany(plan.sql, values)
    return DirectResult([], cursor.rowcount, None)


def _result(plan: _Plan, cursor: sqlite3.Cursor) -> DirectResult:
    if cursor.description is None:
        return DirectResult([], cursor.rowcount, cursor.lastrowid)
    if plan.row_type is None:
        plan.row_type = row_type_of(cursor)
    return result_of(cursor, plan.row_type, plan.readers)


_shared: StatementCache | None = None


def shared_cache() -> StatementCache:
    """The cache every SQLite connection of the process shares (one dialect, one plan each)."""
    global _shared
    if _shared is None:
        # A dialect that has seen a connection: it learns the SQLite version's features
        # (RETURNING, for one) on the first, and compiles accordingly.
        engine = sa.create_engine("sqlite://")
        with engine.connect():
            pass
        engine.dispose()
        _shared = StatementCache(engine.dialect)
    return _shared


def _ordered(
    names: Sequence[str], values: Mapping[str, Any], binders: Mapping[str, Processor]
) -> list[Any]:
    if not binders:
        return [values[name] for name in names]
    out = []
    for name in names:
        value = values[name]
        binder = binders.get(name)
        out.append(binder(value) if binder is not None else value)
    return out
