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
from agentworld.storage.versions import foreign_schema_problem

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


def _v7_event_log(conn: sa.Connection) -> None:
    """The event log orders messages too (``events.message_id``, ``ix_messages_id`` to join a
    log row to its message), and on SQLite its ``seq`` becomes ``AUTOINCREMENT``: without it a
    deleted last row's number is handed out again, and a client resuming after that number would
    skip the new row. SQLite cannot change a key in place, so the table is rebuilt, rows and
    numbers kept. Messages stored before this version have no log row; the stream starts after
    them (their transcript is still read from ``messages``)."""
    events = schema.events
    if conn.dialect.name == "sqlite":
        found = conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'"
        ).scalar()
        if found is not None and "AUTOINCREMENT" not in str(found).upper():
            # A trigger that writes to ``events`` (made by v9, dropped by v12) would follow
            # the rename to the old table and break with it.
            conn.exec_driver_sql("DROP TRIGGER IF EXISTS messages_logged")
            conn.exec_driver_sql("ALTER TABLE events RENAME TO events_before_v7")
            conn.exec_driver_sql("DROP INDEX IF EXISTS ix_events_world")
            events.create(conn)
            conn.exec_driver_sql(
                "INSERT INTO events (seq, world, chat_id, kind, payload, created_at) "
                "SELECT seq, world, chat_id, kind, payload, created_at FROM events_before_v7"
            )
            conn.exec_driver_sql("DROP TABLE events_before_v7")
    columns = {c["name"] for c in sa.inspect(conn).get_columns("events")}
    if "message_id" not in columns:
        conn.execute(sa.text("ALTER TABLE events ADD COLUMN message_id VARCHAR(64)"))
    indexes = {i["name"] for i in sa.inspect(conn).get_indexes("messages")}
    if "ix_messages_id" not in indexes:
        (by_id,) = (i for i in schema.messages.indexes if i.name == "ix_messages_id")
        by_id.create(conn)


def _v8_partial_call_id_index(conn: sa.Connection) -> None:
    """``ix_messages_tool_call`` holds only the messages that carry a call id (tool results),
    the ones its lookups ask for; every other message no longer adds an entry under NULL."""
    (by_call,) = (i for i in schema.messages.indexes if i.name == "ix_messages_tool_call")
    conn.exec_driver_sql("DROP INDEX IF EXISTS ix_messages_tool_call")
    by_call.create(conn)


def _v9_message_log_trigger(_conn: sa.Connection) -> None:
    """Made a SQLite trigger that wrote a transcript message's event-log row; version 12 drops
    it again, so a database upgraded past both never needs it."""


def _v10_leases_in_their_key(conn: sa.Connection) -> None:
    """On SQLite, ``chat_leases`` is rebuilt ``WITHOUT ROWID`` (``schema.chat_leases``): two
    pages less to write a turn. The leases held are copied over, so a chat being run by
    another process stays its."""
    if conn.dialect.name != "sqlite":
        return
    found = conn.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'chat_leases'"
    ).scalar()
    if found is None or "WITHOUT ROWID" in str(found).upper():
        return
    conn.exec_driver_sql("ALTER TABLE chat_leases RENAME TO chat_leases_before_v10")
    schema.chat_leases.create(conn)
    conn.exec_driver_sql(
        "INSERT INTO chat_leases (world, chat_id, owner, expires_at) "
        "SELECT world, chat_id, owner, expires_at FROM chat_leases_before_v10"
    )
    conn.exec_driver_sql("DROP TABLE chat_leases_before_v10")


def _v11_grant_redirect_targets(conn: sa.Connection) -> None:
    """Grants name the files a shell line may write (``approval_grants.redirect_targets``).
    Grants stored before have none, and so cover no line that writes files: asked again."""
    columns = {c["name"] for c in sa.inspect(conn).get_columns("approval_grants")}
    if "redirect_targets" not in columns:  # a database made at v4 with this code has it
        conn.execute(sa.text("ALTER TABLE approval_grants ADD COLUMN redirect_targets JSON"))


def _v12_message_log_by_insert(conn: sa.Connection) -> None:
    """A transcript message's event-log row is written by its own insert, after the world's log
    lock (``queries.insert_messages``), on both backends: the SQLite trigger goes."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("DROP TRIGGER IF EXISTS messages_logged")


def _v13_chat_branches_and_cuts(conn: sa.Connection) -> None:
    """Chats know the chat and message they were branched from, and how often messages were
    removed from them (``schema.chats``)."""
    columns = {c["name"] for c in sa.inspect(conn).get_columns("chats")}
    if "branch_of" not in columns:  # a database made at v1 with this code has them
        conn.execute(sa.text("ALTER TABLE chats ADD COLUMN branch_of VARCHAR(64)"))
        conn.execute(sa.text("ALTER TABLE chats ADD COLUMN branch_message VARCHAR(64)"))
        conn.execute(sa.text("ALTER TABLE chats ADD COLUMN cuts INTEGER NOT NULL DEFAULT 0"))


def _v14_message_numbers_never_reused(conn: sa.Connection) -> None:
    """On SQLite, ``messages`` is rebuilt with ``AUTOINCREMENT`` (``schema.messages``): once the
    newest messages of a chat can be removed, their numbers must not be given again. The rows
    are copied over with their numbers."""
    if conn.dialect.name != "sqlite":
        return  # a PostgreSQL sequence never goes back
    found = conn.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'messages'"
    ).scalar()
    if found is None or "AUTOINCREMENT" in str(found).upper():
        return
    for index in schema.messages.indexes:  # index names are the database's, not the table's
        conn.exec_driver_sql(f"DROP INDEX IF EXISTS {index.name}")
    # The columns it had: later versions add more to ``schema.messages``, left empty here.
    kept = {c["name"] for c in sa.inspect(conn).get_columns("messages")}
    conn.exec_driver_sql("ALTER TABLE messages RENAME TO messages_before_v14")
    schema.messages.create(conn)
    columns = ", ".join(column.name for column in schema.messages.columns if column.name in kept)
    conn.exec_driver_sql(
        f"INSERT INTO messages ({columns}) SELECT {columns} FROM messages_before_v14 ORDER BY seq"
    )
    conn.exec_driver_sql("DROP TABLE messages_before_v14")


def _v15_message_cost(conn: sa.Connection) -> None:
    """An agent's message names the model its call went to and what the call cost
    (``messages.model``, ``messages.cost_usd``), recorded at the prices of the day. Messages
    stored before have neither: their cost is unknown, never 0."""
    columns = {c["name"] for c in sa.inspect(conn).get_columns("messages")}
    if "model" not in columns:  # v14 rebuilt the table from this code's schema: it has them
        conn.execute(sa.text("ALTER TABLE messages ADD COLUMN model VARCHAR(256)"))
    if "cost_usd" not in columns:
        conn.execute(sa.text("ALTER TABLE messages ADD COLUMN cost_usd FLOAT"))


MIGRATIONS: Sequence[Migration] = (
    _v1_core_tables,
    _v2_event_and_tool_logs,
    _v3_pending_calls,
    _v4_approvals,
    _v5_finite_approval_timeouts,
    _v6_chat_inbox_and_leases,
    _v7_event_log,
    _v8_partial_call_id_index,
    _v9_message_log_trigger,
    _v10_leases_in_their_key,
    _v11_grant_redirect_targets,
    _v12_message_log_by_insert,
    _v13_chat_branches_and_cuts,
    _v14_message_numbers_never_reused,
    _v15_message_cost,
)


CURRENT_VERSION = sa.select(sa.func.max(schema.schema_version.c.version))


def current_version(conn: sa.Connection) -> int:
    if not sa.inspect(conn).has_table("schema_version"):
        return 0
    return int(conn.execute(CURRENT_VERSION).scalar() or 0)


def _refuse_foreign_schema(conn: sa.Connection) -> None:
    problem = foreign_schema_problem(
        sa.inspect(conn).get_table_names(), whole_database=conn.dialect.name == "sqlite"
    )
    if problem is not None:
        raise StorageError(problem)


def upgrade(conn: sa.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Apply the migrations the database lacks; returns the version it ends at."""
    _refuse_foreign_schema(conn)
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
