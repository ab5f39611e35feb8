"""Schema migrations on real SQLite files: a database left by an older version is brought up to
date when opened, in one transaction; a newer one is refused untouched.

Complements the migration tests in ``test_sql_storage.py`` (fresh database, version 1 upgraded,
infinite approval timeouts, a newer version refused)."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from agentworld.errors import StorageError
from agentworld.models import Message, World
from agentworld.models.events import SystemEvent
from agentworld.storage import migrations, schema
from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage
from agentworld.storage.url import resolve_database_url
from agentworld.testing.postgres import create_database

pytestmark = pytest.mark.sqlite_only  # SQLite files read and written beside the store

LATEST = len(migrations.MIGRATIONS)
CREATED = "2024-01-01T00:00:00+00:00"

# tool_logs as versions 2 and 3 created it: no ``runner`` column yet.
PRE_V4_TOOL_LOGS = """
CREATE TABLE tool_logs (
    seq INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    world VARCHAR(64) NOT NULL,
    chat_id VARCHAR(64) NOT NULL,
    agent VARCHAR(64) NOT NULL,
    tool_call_id VARCHAR(128) NOT NULL,
    tool_name VARCHAR(200) NOT NULL,
    input JSON,
    output JSON,
    status VARCHAR(16) NOT NULL,
    started_at VARCHAR(40) NOT NULL,
    finished_at VARCHAR(40),
    duration_ms FLOAT
)
"""


def sync_url(db_url: str) -> str:
    return db_url.replace("sqlite+aiosqlite://", "sqlite://")


def set_version(conn: sa.Connection, version: int) -> None:
    conn.execute(sa.delete(schema.schema_version))
    conn.execute(sa.insert(schema.schema_version).values(version=version))


def insert_world(conn: sa.Connection, name: str, config: object) -> None:
    conn.execute(
        sa.insert(schema.worlds).values(
            name=name, config=config, created_at=CREATED, updated_at=CREATED
        )
    )


def inspect_file(db_url: str) -> tuple[int, set[str], list[int]]:
    """The version, the tables and the raw schema_version rows, read without agentworld."""
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.select(schema.schema_version.c.version)).scalars().all()
            return (
                migrations.current_version(conn),
                set(sa.inspect(conn).get_table_names()),
                list(rows),
            )
    finally:
        engine.dispose()


def make_old_database(db_url: str, version: int) -> None:
    """A file exactly as agentworld at ``version`` left it, with a world in it."""
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.begin() as conn:
            assert migrations.upgrade(conn, migrations.MIGRATIONS[:version]) == version
            insert_world(conn, "old", {"description": f"made by v{version}", "turn_limit": 4})
    finally:
        engine.dispose()


@pytest.mark.parametrize("version", range(2, LATEST))
async def test_a_database_at_any_older_version_is_upgraded_on_open_and_keeps_its_data(
    db_url: str, version: int
) -> None:
    make_old_database(db_url, version)

    async with SQLStorage(db_url) as storage:
        world = await storage.get_world("old")

    assert (world.description, world.turn_limit) == (f"made by v{version}", 4)
    found_version, tables, rows = inspect_file(db_url)
    assert found_version == LATEST
    assert rows == [LATEST]  # one row: the version is replaced, not appended
    assert set(schema.metadata.tables) <= tables


async def test_tool_logs_from_before_version_4_gain_the_runner_column_and_keep_their_rows(
    db_url: str,
) -> None:
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, migrations.MIGRATIONS[:1])
            schema.events.create(conn)
            conn.exec_driver_sql(PRE_V4_TOOL_LOGS)
            schema.pending_calls.create(conn)
            set_version(conn, 3)
            insert_world(conn, "old", {})
            conn.exec_driver_sql(
                "INSERT INTO tool_logs (world, chat_id, agent, tool_call_id, tool_name, input, "
                "output, status, started_at) VALUES ('old', 'c1', 'a1', 'call_old', 'shell_cmd', "
                "'{\"command\": \"ls\"}', '\"listing\"', 'ok', ?)",
                (CREATED,),
            )
            columns = {c["name"] for c in sa.inspect(conn).get_columns("tool_logs")}
            assert "runner" not in columns
    finally:
        engine.dispose()

    async with SQLStorage(db_url) as storage:
        seq = await storage.tool_logs.start(
            world="old", chat_id="c1", agent="a1", tool_call_id="call_new",
            tool_name="shell_cmd", arguments={"command": "pwd"},
        )
        running = await storage.tool_logs.running("old")
        logs = await storage.tool_logs.find("old")

    assert [(e.tool_call_id, e.status, e.input) for e in logs] == [
        ("call_old", "ok", {"command": "ls"}),
        ("call_new", "running", {"command": "pwd"}),
    ]
    assert [(r.seq, r.tool_call_id) for r in running] == [(seq, "call_new")]
    assert running[0].runner  # the new column is written by this version
    version, tables, _ = inspect_file(db_url)
    assert version == LATEST
    assert {"approval_grants", "audit_log"} <= tables


async def test_a_failed_upgrade_leaves_the_database_at_its_old_version_with_no_new_tables(
    db_url: str,
) -> None:
    # Version 5 rewrites world settings; one that is not a JSON object makes it fail after
    # versions 2 to 4 have already created their tables in the same transaction.
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, migrations.MIGRATIONS[:1])
            insert_world(conn, "corrupt", "not an object")
    finally:
        engine.dispose()
    before = inspect_file(db_url)

    with pytest.raises((ValueError, StorageError)):
        await SQLStorage(db_url).open()

    assert inspect_file(db_url) == before
    version, tables, _ = before
    assert version == 1
    assert not {"events", "tool_logs", "pending_calls", "approval_grants"} & tables


@pytest.mark.parametrize(("stored", "loaded"), [(-5, 300.0), (0, 300.0), (0.5, 0.5), (600, 600)])
def test_version_5_replaces_approval_timeouts_that_are_not_positive(
    db_url: str, stored: float, loaded: float
) -> None:
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, migrations.MIGRATIONS[:4])
            insert_world(conn, "w", {"approval_timeout": stored, "description": "kept"})
            insert_world(conn, "unset", {"description": "no timeout stored"})
        with engine.begin() as conn:
            assert migrations.upgrade(conn) == LATEST
            rows = conn.execute(sa.select(schema.worlds.c.name, schema.worlds.c.config)).all()
            configs: dict[str, Any] = {row.name: row.config for row in rows}
    finally:
        engine.dispose()

    assert configs["w"] == {"approval_timeout": loaded, "description": "kept"}
    assert configs["unset"] == {"description": "no timeout stored"}


async def test_a_refused_newer_database_is_left_exactly_as_it_was(db_url: str) -> None:
    newer = LATEST + 3
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn)
            insert_world(conn, "future", {"description": "from a newer agentworld"})
            set_version(conn, newer)
    finally:
        engine.dispose()
    before = inspect_file(db_url)

    with pytest.raises(StorageError, match="upgrade agentworld"):
        await SQLStorage(db_url).open()

    assert inspect_file(db_url) == before == (newer, before[1], [newer])
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.connect() as conn:
            names = conn.execute(sa.select(schema.worlds.c.name)).scalars().all()
    finally:
        engine.dispose()
    assert names == ["future"]


def _tool_call_index(conn: sa.Connection) -> str:
    """How the database defines ``ix_messages_tool_call`` (its WHERE clause, if any)."""
    if conn.dialect.name == "sqlite":
        query = "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'ix_messages_tool_call'"
    else:
        query = "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_messages_tool_call'"
    return str(conn.exec_driver_sql(query).scalar())


def _as_version_7(conn: sa.Connection) -> None:
    """Everything at version 7, with the call-id index as version 7 made it: every row in it."""
    assert migrations.upgrade(conn, migrations.MIGRATIONS[:7]) == 7
    conn.exec_driver_sql("DROP INDEX ix_messages_tool_call")
    conn.exec_driver_sql("CREATE INDEX ix_messages_tool_call ON messages (world, tool_call_id)")
    assert "NOT NULL" not in _tool_call_index(conn).upper()


async def _results_found_by_call_id(url: str) -> None:
    async with SQLStorage(url) as storage:
        await storage.create_world(World(name="w"))
        plain = Message(chat_id="c1", role="user", sender="human", content="hi")
        result = Message(chat_id="c1", role="tool", sender="a1", tool_call_id="call_1", content="ok")
        await storage.append_messages("w", [(None, plain), ("a1", result)])
        used, _policy = await storage.approvals.before_tool_calls("w", ["call_1", "call_2"])
        assert used == {"call_1"}


async def test_version_8_indexes_only_messages_that_carry_a_call_id(db_url: str) -> None:
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.begin() as conn:
            _as_version_7(conn)
    finally:
        engine.dispose()
    await _results_found_by_call_id(db_url)
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.connect() as conn:
            assert migrations.current_version(conn) == LATEST
            assert "WHERE TOOL_CALL_ID IS NOT NULL" in _tool_call_index(conn).upper()
            plan = conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN SELECT tool_call_id FROM messages "
                "WHERE world = 'w' AND tool_call_id IN ('call_1', 'call_2')"
            ).all()
            assert any("ix_messages_tool_call" in str(row[-1]) for row in plan), plan
    finally:
        engine.dispose()


async def test_version_8_on_postgresql(postgres_server: str) -> None:
    url = create_database(postgres_server, f"migrate8_{os.getpid()}")
    engine = create_async_engine(resolve_database_url(url))
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_as_version_7)
    finally:
        await engine.dispose()
    await _results_found_by_call_id(url)
    engine = create_async_engine(resolve_database_url(url))
    try:
        async with engine.connect() as conn:
            assert await conn.run_sync(migrations.current_version) == LATEST
            index = await conn.run_sync(_tool_call_index)
            assert "WHERE (TOOL_CALL_ID IS NOT NULL)" in index.upper()
    finally:
        await engine.dispose()


# chat_leases as versions 6 to 9 created it on SQLite: a rowid table with its key's index.
PRE_V10_CHAT_LEASES = """
CREATE TABLE chat_leases (
    world VARCHAR(64) NOT NULL,
    chat_id VARCHAR(64) NOT NULL,
    owner VARCHAR(200) NOT NULL,
    expires_at FLOAT NOT NULL,
    PRIMARY KEY (world, chat_id)
)
"""


def _leases_table(conn: sa.Connection) -> str:
    return str(
        conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'chat_leases'"
        ).scalar()
    )


async def test_version_10_keeps_sqlite_leases_in_their_key_and_keeps_the_leases_held(
    db_url: str,
) -> None:
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.begin() as conn:
            assert migrations.upgrade(conn, migrations.MIGRATIONS[:9]) == 9
            conn.exec_driver_sql("DROP TABLE chat_leases")
            conn.exec_driver_sql(PRE_V10_CHAT_LEASES)
            conn.exec_driver_sql(
                "INSERT INTO chat_leases VALUES ('w', 'c1', 'host:1:2', 4102444800.0)"
            )
            assert "WITHOUT ROWID" not in _leases_table(conn).upper()
    finally:
        engine.dispose()

    async with SQLStorage(db_url):
        pass

    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.connect() as conn:
            assert migrations.current_version(conn) == LATEST
            assert "WITHOUT ROWID" in _leases_table(conn).upper()
            held = conn.exec_driver_sql("SELECT world, chat_id, owner, expires_at FROM chat_leases")
            assert held.all() == [("w", "c1", "host:1:2", 4102444800.0)]
            tables = set(sa.inspect(conn).get_table_names())
            assert "chat_leases_before_v10" not in tables
    finally:
        engine.dispose()


# approval_grants as versions 4 to 10 created it: no ``redirect_targets`` column yet.
PRE_V11_APPROVAL_GRANTS = """
CREATE TABLE approval_grants (
    grant_id VARCHAR(64) NOT NULL PRIMARY KEY,
    world VARCHAR(64) NOT NULL,
    scope VARCHAR(32) NOT NULL,
    agent VARCHAR(64),
    chat_id VARCHAR(64),
    tool_name VARCHAR(200) NOT NULL,
    roots JSON,
    allow_redirection BOOLEAN DEFAULT 0 NOT NULL,
    approval_id VARCHAR(128),
    created_at VARCHAR(40) NOT NULL,
    revoked_at VARCHAR(40)
)
"""


async def test_version_11_keeps_old_grants_and_they_cover_no_writing_line(db_url: str) -> None:
    """A grant stored when it remembered only "redirection allowed" still loads; with no
    targets it covers the approved commands, and no line that writes a file (fail closed)."""
    from agentworld.approval.grants import find_covering_grant

    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.begin() as conn:
            assert migrations.upgrade(conn, migrations.MIGRATIONS[:10]) == 10
            conn.exec_driver_sql("DROP TABLE approval_grants")
            conn.exec_driver_sql(PRE_V11_APPROVAL_GRANTS)
            insert_world(conn, "w", World(name="w").model_dump(mode="json"))
            conn.exec_driver_sql(
                "INSERT INTO approval_grants (grant_id, world, scope, agent, chat_id, tool_name,"
                " roots, allow_redirection, created_at) VALUES ('grant_old', 'w', 'always', NULL,"
                " NULL, 'shell_cmd', '[\"echo\"]', 1, '" + CREATED + "')"
            )
    finally:
        engine.dispose()

    async with SQLStorage(db_url) as storage:
        (grant,) = await storage.approvals.grants("w")

    assert (grant.grant_id, grant.roots, grant.redirect_targets) == ("grant_old", frozenset({"echo"}), None)
    assert find_covering_grant([grant], "shell_cmd", {"command": "echo hi"}, agent="a", chat_id="c")
    assert not find_covering_grant(
        [grant], "shell_cmd", {"command": "echo hi > f"}, agent="a", chat_id="c", resolve=lambda t: t
    )


# The trigger versions 9 to 11 made on SQLite: it wrote a transcript message's event-log row.
PRE_V12_MESSAGE_LOG_TRIGGER = """
CREATE TRIGGER IF NOT EXISTS messages_logged AFTER INSERT ON messages
WHEN NEW.memory_owner IS NULL
BEGIN
    INSERT INTO events (world, chat_id, kind, payload, created_at, message_id)
    VALUES (NEW.world, NEW.chat_id, 'message', '{}', NEW.created_at, NEW.message_id);
END
"""


async def test_version_12_drops_the_sqlite_log_trigger_and_each_message_is_logged_once(
    tmp_path: Path,
) -> None:
    """A file left by version 11 logs messages by a trigger; upgraded, the trigger is gone and
    each transcript message still has exactly one log row (written by its insert), a memory
    row none, in the order stored, between the other events; the rows logged before stay."""
    url = f"sqlite:///{tmp_path / 'v11.db'}"
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            assert migrations.upgrade(conn, migrations.MIGRATIONS[:11]) == 11
            conn.exec_driver_sql(PRE_V12_MESSAGE_LOG_TRIGGER)
            insert_world(conn, "w", World(name="w").model_dump(mode="json"))
            conn.exec_driver_sql(
                "INSERT INTO chats (world, chat_id, name, created_at, updated_at)"
                f" VALUES ('w', 'c', 'c', '{CREATED}', '{CREATED}')"
            )
            conn.exec_driver_sql(
                "INSERT INTO messages (world, message_id, chat_id, role, sender, content, created_at)"
                f" VALUES ('w', 'msg_old', 'c', 'user', 'human', 'old', '{CREATED}')"
            )
    finally:
        engine.dispose()

    async with SQLStorage(url) as storage:
        log = EventLog(storage)
        first, private, second = said("one"), said("kept to a1"), said("two")
        await storage.append_messages("w", [(None, first), ("a1", private)])
        await log.append([SystemEvent(world="w", chat="c", text="between")])
        await storage.append_messages("w", [("a1", first), (None, second)])
        batch = await log.after("w", 0)

    shown = [
        (e.kind, e.document["message"]["messageId"] if e.kind == "message" else e.document["text"])
        for e in batch.events
    ]
    assert shown == [
        ("message", "msg_old"),
        ("message", first.message_id),
        ("system", "between"),
        ("message", second.message_id),
    ]
    with closing(sqlite3.connect(tmp_path / "v11.db")) as conn:
        version = conn.execute("SELECT max(version) FROM schema_version").fetchone()[0]
        triggers = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
    assert (version, triggers) == (LATEST, [])


def said(text: str) -> Message:
    return Message(chat_id="c", sender="human", role="user", content=text)


async def test_version_14_numbers_sqlite_messages_without_reuse_and_keeps_them(tmp_path: Path) -> None:
    """A file left by version 13 numbers messages by rowid, which gives the number of the newest
    removed message again; upgraded, its messages keep their numbers and indexes, and a number
    once given is never given again."""
    url = f"sqlite:///{tmp_path / 'v13.db'}"
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            assert migrations.upgrade(conn, migrations.MIGRATIONS[:13]) == 13
            made = str(conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'messages'").scalar())
            conn.exec_driver_sql("DROP TABLE messages")  # as versions 1 to 13 made it
            conn.exec_driver_sql(made.replace("AUTOINCREMENT", ""))
            for index in schema.messages.indexes:
                index.create(conn)
            insert_world(conn, "w", World(name="w").model_dump(mode="json"))
            for n in (1, 2):
                conn.exec_driver_sql(
                    "INSERT INTO messages (world, message_id, chat_id, role, sender, content, created_at)"
                    f" VALUES ('w', 'msg_{n}', 'c', 'user', 'human', 'm{n}', '{CREATED}')"
                )
    finally:
        engine.dispose()

    async with SQLStorage(url):
        pass

    with closing(sqlite3.connect(tmp_path / "v13.db")) as conn:
        assert conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] == LATEST
        assert conn.execute("SELECT seq, message_id FROM messages ORDER BY seq").fetchall() == [
            (1, "msg_1"), (2, "msg_2"),
        ]  # fmt: skip
        indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {index.name for index in schema.messages.indexes} <= indexes
        conn.execute("DELETE FROM messages WHERE seq = 2")
        conn.execute(
            "INSERT INTO messages (world, message_id, chat_id, role, sender, content, created_at)"
            f" VALUES ('w', 'msg_3', 'c', 'user', 'human', 'm3', '{CREATED}')"
        )
        assert conn.execute("SELECT seq FROM messages WHERE message_id = 'msg_3'").fetchone() == (3,)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "messages_before_v14" not in tables
