"""Which schema version this code is written for, and whether a database is at it.

A database at this version needs no schema work, so opening it runs no migration and loads
no SQLAlchemy (``SQLStorage.open``): one read answers. Any other -- a new database, an older
one to upgrade, a newer one to refuse, another program's -- goes through ``migrations``.
"""

from __future__ import annotations

from typing import Final

from agentworld.storage.connection import Connection
from agentworld.storage.statement import Sql

SCHEMA_VERSION: Final = 10
"""``len(migrations.MIGRATIONS)`` (a test holds them equal)."""

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
