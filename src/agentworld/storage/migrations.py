"""Versioned schema migrations, applied in order when a database is opened.

Each migration is a function of a synchronous connection (run through
``AsyncConnection.run_sync``) so it can use SQLAlchemy's portable DDL. A
database made by an older version has a lower number in ``schema_version`` and
is brought up to date inside one transaction; a database made by a NEWER
version is refused rather than misread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sqlalchemy as sa

from agentworld.errors import StorageError
from agentworld.models.domain import MAX_APPROVAL_TIMEOUT
from agentworld.storage import schema

Migration = Callable[[sa.Connection], None]


def _v1_core_tables(conn: sa.Connection) -> None:
    for table in (schema.worlds, schema.agents, schema.chats, schema.messages):
        table.create(conn, checkfirst=True)


def _v2_event_and_tool_logs(conn: sa.Connection) -> None:
    for table in (schema.events, schema.tool_logs):
        table.create(conn, checkfirst=True)


def _v3_pending_calls(conn: sa.Connection) -> None:
    schema.pending_calls.create(conn, checkfirst=True)


def _v4_approvals(conn: sa.Connection) -> None:
    columns = {c["name"] for c in sa.inspect(conn).get_columns("tool_logs")}
    if "runner" not in columns:  # databases whose tool_logs predate v4
        conn.execute(sa.text("ALTER TABLE tool_logs ADD COLUMN runner VARCHAR(128)"))
    for table in (schema.approval_grants, schema.audit_log):
        table.create(conn, checkfirst=True)


def _v5_finite_approval_timeouts(conn: sa.Connection) -> None:
    """Worlds stored before the approval timeout was checked may hold ``Infinity`` (from
    ``--approval-timeout inf`` or ``1e400``), which no longer loads: "never time out" becomes
    the longest wait allowed, anything else unusable the default."""
    worlds = schema.worlds
    for row in conn.execute(sa.select(worlds.c.name, worlds.c.config)).all():
        config = dict(row.config)
        value = config.get("approval_timeout")
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if 0 < value <= MAX_APPROVAL_TIMEOUT:
            continue
        config["approval_timeout"] = MAX_APPROVAL_TIMEOUT if value > 0 else 300.0  # NaN: default
        conn.execute(sa.update(worlds).where(worlds.c.name == row.name).values(config=config))


def _v6_chat_inbox_and_leases(conn: sa.Connection) -> None:
    for table in (schema.chat_inbox, schema.chat_leases):
        table.create(conn, checkfirst=True)


MIGRATIONS: Sequence[Migration] = (
    _v1_core_tables,
    _v2_event_and_tool_logs,
    _v3_pending_calls,
    _v4_approvals,
    _v5_finite_approval_timeouts,
    _v6_chat_inbox_and_leases,
)


def current_version(conn: sa.Connection) -> int:
    if not sa.inspect(conn).has_table("schema_version"):
        return 0
    return int(conn.execute(sa.select(sa.func.max(schema.schema_version.c.version))).scalar() or 0)


def upgrade(conn: sa.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Apply the migrations the database lacks; returns the version it ends at."""
    schema.schema_version.create(conn, checkfirst=True)
    version = current_version(conn)
    if version > len(migrations):
        raise StorageError(
            f"database schema version {version} is newer than this agentworld "
            f"(knows {len(migrations)}); upgrade agentworld"
        )
    for number, migration in enumerate(migrations[version:], start=version + 1):
        migration(conn)
        conn.execute(sa.delete(schema.schema_version))
        conn.execute(sa.insert(schema.schema_version).values(version=number))
    return len(migrations)
