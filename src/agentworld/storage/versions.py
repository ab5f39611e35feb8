"""Which schema version this code is written for, and whether a database is at it.

A database at this version needs no schema work, so opening it runs no migration and loads
no SQLAlchemy (``SQLStorage.open``): one read answers. Any other -- a new database, an older
one to upgrade, a newer one to refuse, another program's -- goes through ``migrations``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path
from typing import Final

from agentworld.storage.connection import Connection
from agentworld.storage.statement import Sql

SCHEMA_VERSION: Final = 15
"""``len(migrations.MIGRATIONS)`` (a test holds them equal)."""

TABLES: Final = (
    "schema_version", "worlds", "agents", "chats", "messages", "events", "tool_logs",
    "pending_calls", "approval_grants", "audit_log", "chat_inbox", "chat_leases",
)
"""The tables of this schema (``schema.metadata``'s; a test holds them equal)."""

_HAS_VERSION_TABLE: Final = Sql(
    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
    postgresql="SELECT 1 WHERE to_regclass('schema_version') IS NOT NULL",
)
_VERSION: Final = Sql("SELECT max(version) FROM schema_version")


def schema_is_current(conn: Connection) -> bool:
    """True when the database's schema is at ``SCHEMA_VERSION`` (inside a read unit)."""
    if conn.execute(_HAS_VERSION_TABLE).first() is None:
        return False
    return conn.execute(_VERSION).scalar() == SCHEMA_VERSION


def foreign_schema_problem(tables: Iterable[str], *, whole_database: bool) -> str | None:
    """Why a database with these ``tables`` belongs to another program, or None when it is
    ours (it has our ``schema_version``) or empty.

    ``whole_database``: the file is ours alone (SQLite), so any table not ours gives it away.
    A PostgreSQL database may be shared, so there only a table with one of our names is a
    conflict: we would skip creating it and misread theirs.
    """
    found = {name for name in tables if not name.startswith("sqlite_")}  # SQLite's own
    if not found or "schema_version" in found:
        return None
    ours = set(TABLES)
    suspects = sorted(found if whole_database else found & ours)
    if not suspects:
        return None
    shown = ", ".join(suspects[:5]) + (", …" if len(suspects) > 5 else "")
    return (
        f"the database belongs to another program (it has tables {shown} and no agentworld "
        "schema); nothing was changed: use a database of its own for agentworld"
    )


def sqlite_foreign_schema(path: Path) -> str | None:
    """``foreign_schema_problem`` for a SQLite file, read without writing a byte: opening it
    the usual way would already switch its journal to WAL. None when it is not a database."""
    if not path.is_file():
        return None
    try:
        with closing(sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)) as conn:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.Error:
        return None  # not a SQLite file, or unreadable: opening it reports that properly
    except ValueError as exc:  # table names that are not text: the file's schema is damaged
        return f"the database is damaged (its list of tables cannot be read: {exc}); nothing was changed"
    return foreign_schema_problem((name for (name,) in rows), whole_database=True)
