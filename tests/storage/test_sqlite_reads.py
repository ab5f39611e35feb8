"""The bare SQLite reader of ``agentworld messages`` (``storage.sqlite_reads``): its statements
are the storage's own, and what it reads is what the storage reads, message for message."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite as sqlite_dialect

from agentworld.models import Agent, Chat, Message, ToolCall, World
from agentworld.storage import (
    catalog,
    inbox,
    migrations,
    pending_rows,
    queries,
    schema,
    sqlite_reads,
    tool_logs,
    versions,
)
from agentworld.storage.sql import SQLStorage
from agentworld.storage.statement import Sql

STATEMENTS: list[tuple[str, Sql | sa.Select[Any]]] = [
    (sqlite_reads.VERSION, migrations.CURRENT_VERSION),
    (sqlite_reads.WORLD, queries.WORLD),
    (sqlite_reads.ALL_WORLDS, catalog._ALL_WORLDS),
    (sqlite_reads.CHAT_EXISTS, queries.CHAT_EXISTS),
    (sqlite_reads.AGENT_NAMED, queries.AGENT_NAMED),
    (sqlite_reads.TRANSCRIPT, queries.TRANSCRIPT),
    (sqlite_reads.MEMORY, queries.MEMORY),
    (sqlite_reads.MEMORY_OF_EVERY_CHAT, queries.MEMORY_OF_EVERY_CHAT),
    (sqlite_reads.RUNNING_TOOLS, tool_logs.RUNNING),
    (sqlite_reads.CHATS_WITH_WORK, inbox.CHATS_WITH_WORK),
    (sqlite_reads.PENDING_CALLS, pending_rows.find_statement(False, True, True, False)),
]


def sqlite_text(statement: Sql | sa.Select[Any]) -> str:
    """The SQL the storage runs on SQLite: a ``Sql``'s text, or a SQLAlchemy statement's
    SQLite compilation (``migrations`` reads the schema version with one)."""
    if isinstance(statement, Sql):
        return statement.text
    return str(statement.compile(dialect=sqlite_dialect.dialect(paramstyle="named")))


@pytest.mark.parametrize(("text", "statement"), STATEMENTS)
def test_each_statement_is_the_storage_statement(
    text: str, statement: Sql | sa.Select[Any]
) -> None:
    assert " ".join(text.split()) == " ".join(sqlite_text(statement).split())


def test_the_schema_version_is_the_last_migration() -> None:
    assert len(migrations.MIGRATIONS) == sqlite_reads.SCHEMA_VERSION


def test_the_tables_a_current_database_is_checked_for_are_the_schemas() -> None:
    """``versions.TABLES`` tells our tables from another program's without SQLAlchemy."""
    assert sorted(versions.TABLES) == sorted(schema.metadata.tables)


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    return tmp_path / "agentworld.db"


@pytest.fixture
async def storage(db_file: Path) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(f"sqlite:///{db_file}") as store:
        yield store


def varied_messages(chat: str) -> list[tuple[str | None, Message]]:
    """Every shape a stored message takes: text, calls, results, no content, a whole second."""
    call = ToolCall.of("call_1", "read_file", '{"path": "a.txt"}')
    return [
        (None, Message(chat_id=chat, role="user", sender="human", content="héllo [bold]x[/bold] \\[")),
        (None, Message(chat_id=chat, role="assistant", sender="a", agent_id="a", content="two\nlines",
                       reply_to_message_id="msg_x", input_tokens=3, output_tokens=4)),  # fmt: skip
        (None, Message(chat_id=chat, role="system", sender="world", content="stopped")),
        ("a", Message(chat_id=chat, role="assistant", sender="a", agent_id="a", tool_calls=[call])),
        ("a", Message.tool_result(chat_id=chat, agent="a", tool_call_id="call_1", content="{}", batch_id="b")),
        ("a", Message(chat_id=chat, role="user", sender="human", content="",
                      created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))),  # fmt: skip
        ("b", Message(chat_id=chat, role="assistant", sender="b", agent_id="b", content="other agent")),
    ]


async def stored_world(storage: SQLStorage) -> None:
    await storage.create_world(World(name="Team", current_chat_id="c1"))
    for name in ("a", "b"):
        await storage.create_agent(Agent(world="Team", name=name, provider="scripted", model="echo"))
    for chat in ("c1", "c2"):
        await storage.create_chat(Chat(world="Team", chat_id=chat, name=chat))
        await storage.append_messages("Team", varied_messages(chat))


def docs(messages: list[Any]) -> list[dict[str, Any]]:
    return [message.to_json() for message in messages]


async def test_it_reads_every_message_as_the_storage_does(storage: SQLStorage, db_file: Path) -> None:
    await stored_world(storage)
    conn = sqlite_reads.open_current(db_file)
    assert conn is not None
    with conn:
        found = sqlite_reads.world_named(conn, "team")
        assert found is not None and found[0] == "Team"
        assert found[1]["current_chat_id"] == "c1"
        assert sqlite_reads.world_named(conn, "nowhere") is None
        assert sqlite_reads.agent_named(conn, "Team", "A") == "a"
        assert sqlite_reads.agent_named(conn, "Team", "nobody") is None
        assert sqlite_reads.chat_exists(conn, "Team", "c2")
        assert not sqlite_reads.chat_exists(conn, "Team", "c3")
        transcript = sqlite_reads.transcript(conn, "Team", "c1")
        assert len(transcript) == 3
        assert docs(transcript) == docs(await storage.transcript("Team", "c1"))
        for chat in ("c1", "c2", None):
            mine = sqlite_reads.memory(conn, "Team", "a", chat)
            assert mine and docs(mine) == docs(await storage.memory("Team", "a", chat))
    assert transcript[0].to_json()["content"] == "héllo [bold]x[/bold] \\["


async def test_tool_calls_stored_without_their_defaults_read_as_the_model_reads_them(
    storage: SQLStorage, db_file: Path
) -> None:
    """Calls stored by hand or by an older version: no ``type``, no ``arguments``, extra keys."""
    await stored_world(storage)
    calls = [{"id": "c9", "function": {"name": "x"}, "extra": 1}, {"id": "c8", "type": "function",
             "function": {"name": "y", "arguments": "{\"a\": 1}", "more": True}}]  # fmt: skip
    with sqlite3.connect(db_file) as raw:
        raw.execute("UPDATE messages SET tool_calls = ? WHERE tool_calls != 'null'", (json.dumps(calls),))
        raw.execute("UPDATE messages SET tool_calls = '[]' WHERE content = 'stopped'")
    conn = sqlite_reads.open_current(db_file)
    assert conn is not None
    with conn:
        mine = sqlite_reads.memory(conn, "Team", "a", None)
        assert docs(mine) == docs(await storage.memory("Team", "a", None))
        shown = sqlite_reads.transcript(conn, "Team", "c1")
        assert docs(shown) == docs(await storage.transcript("Team", "c1"))
    assert mine[0].to_json()["tool_calls"][0] == {
        "id": "c9", "type": "function", "function": {"name": "x", "arguments": "{}"}
    }  # fmt: skip


@pytest.mark.parametrize(
    "calls",
    ['{"not": "a list"}', '[{"id": 1, "function": {"name": "x"}}]', '[{"id": "c", "type": "other", "function": {"name": "x"}}]', "[3]"],
)
async def test_a_row_the_models_would_refuse_is_left_to_the_full_path(
    storage: SQLStorage, db_file: Path, calls: str
) -> None:
    await stored_world(storage)
    with sqlite3.connect(db_file) as raw:
        raw.execute("UPDATE messages SET tool_calls = ? WHERE tool_calls != 'null'", (calls,))
    conn = sqlite_reads.open_current(db_file)
    assert conn is not None
    with conn, pytest.raises(sqlite_reads.Unreadable):
        sqlite_reads.memory(conn, "Team", "a", "c1")


@pytest.mark.parametrize(
    ("column", "value"),
    [("created_at", "2026-01-02T03:04:05"), ("created_at", "2026-01-02T05:04:05+02:00"),
     ("created_at", "yesterday"), ("role", "developer"), ("content", b"\x00bytes")],
)  # fmt: skip
async def test_a_time_not_in_utc_or_a_strange_column_is_left_to_the_full_path(
    storage: SQLStorage, db_file: Path, column: str, value: object
) -> None:
    await stored_world(storage)
    with sqlite3.connect(db_file) as raw:
        raw.execute(f"UPDATE messages SET {column} = ? WHERE memory_owner IS NULL", (value,))
    conn = sqlite_reads.open_current(db_file)
    assert conn is not None
    with conn, pytest.raises(sqlite_reads.Unreadable):
        sqlite_reads.transcript(conn, "Team", "c1")


async def test_only_a_current_database_of_ours_is_opened(storage: SQLStorage, db_file: Path, tmp_path: Path) -> None:
    assert sqlite_reads.open_current(tmp_path / "missing.db") is None
    assert not (tmp_path / "missing.db").exists()  # never created
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as raw:
        raw.execute("CREATE TABLE notes (text TEXT)")
    assert sqlite_reads.open_current(foreign) is None
    (tmp_path / "text.db").write_text("not a database")
    assert sqlite_reads.open_current(tmp_path / "text.db") is None

    current = sqlite_reads.open_current(db_file)
    assert current is not None
    current.close()
    with sqlite3.connect(db_file) as raw:  # as an older version left it, before the upgrade
        raw.execute("UPDATE schema_version SET version = version - 1")
    assert sqlite_reads.open_current(db_file) is None
