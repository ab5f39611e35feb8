"""A PostgreSQL unit's connection: the stores' SQL text run through SQLAlchemy.

Each ``statement.Sql`` becomes, once, a SQLAlchemy text clause with its types -- JSON
parameters and columns, boolean columns, list parameters as expanding ones -- so asyncpg
receives and returns what SQLAlchemy's own types would (see ``connection``).
"""

from __future__ import annotations

from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.sql.base import Executable

from agentworld.storage.connection import Parameters
from agentworld.storage.statement import Backend, ColumnKind, Sql

_TYPES: Final[dict[ColumnKind, Any]] = {"json": sa.JSON, "bool": sa.Boolean}


class PgConnection:
    """SQLAlchemy's connection inside a PostgreSQL unit, running ``Sql`` statements too."""

    __slots__ = ("_conn", "statements_run")

    backend: Final[Backend] = "postgresql"

    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn
        self.statements_run = 0
        """Statements the server answered in this unit: none, and a lost connection means
        nothing of the unit ran (``async_engine`` may then run it again)."""

    def execute(self, statement: Sql | Executable, parameters: Parameters | None = None) -> Any:
        if isinstance(statement, Sql):
            plan = statement.pg_plan
            statement = plan if plan is not None else _clause(statement)
        result = self._conn.execute(statement, parameters)
        self.statements_run += 1
        return result

    def exec_driver_sql(self, statement: str) -> Any:
        result = self._conn.exec_driver_sql(statement)
        self.statements_run += 1
        return result


def _clause(statement: Sql) -> Executable:
    clause: Any = sa.text(statement.postgresql)
    binds = [sa.bindparam(name, type_=sa.JSON) for name in statement.json_params]
    binds += [sa.bindparam(name, expanding=True) for name in statement.lists]
    if binds:
        clause = clause.bindparams(*binds)
    if statement.columns:
        clause = clause.columns(**{name: _TYPES[kind] for name, kind in statement.columns.items()})
    statement.pg_plan = clause
    return clause
