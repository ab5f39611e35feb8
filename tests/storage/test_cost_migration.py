"""Version 15 gives messages their model and cost (SPEC O2): a database version 14 left is
upgraded on open, on SQLite and on PostgreSQL, its messages kept, the calls stored before it
counted with their tokens and an unknown cost — never a cost of 0."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from agentworld.models import Message, World
from agentworld.storage import migrations, schema
from agentworld.storage.sql import SQLStorage
from agentworld.storage.url import resolve_database_url

pytestmark = pytest.mark.both_backends

T = TypeVar("T")
CREATED = "2024-01-01T00:00:00+00:00"


def _as_version_14(conn: sa.Connection) -> None:
    """The schema as version 14 made it (no ``model``, no ``cost_usd``), with one answer of an
    agent in its memory and in the transcript, tokens counted."""
    migrations.upgrade(conn)
    conn.execute(sa.text("ALTER TABLE messages DROP COLUMN model"))
    conn.execute(sa.text("ALTER TABLE messages DROP COLUMN cost_usd"))
    conn.execute(sa.delete(schema.schema_version))
    conn.execute(sa.insert(schema.schema_version).values(version=14))
    conn.execute(
        sa.insert(schema.worlds).values(
            name="w", config=World(name="w").model_dump(mode="json"), created_at=CREATED, updated_at=CREATED
        )
    )
    conn.execute(
        sa.insert(schema.chats).values(world="w", chat_id="c", name="c", created_at=CREATED, updated_at=CREATED)
    )
    for owner in ("a1", None):
        conn.execute(
            sa.text(
                "INSERT INTO messages (world, chat_id, memory_owner, message_id, role, sender,"
                " agent_id, content, created_at, input_tokens, output_tokens) VALUES ('w', 'c',"
                f" :owner, 'msg_old', 'assistant', 'a1', 'a1', 'old answer', '{CREATED}', 40, 2)"
            ),
            {"owner": owner},
        )


async def run_on(db_url: str, work: Callable[[sa.Connection], T]) -> T:
    """``work`` in one transaction of the database, through SQLAlchemy (async on PostgreSQL)."""
    url = resolve_database_url(db_url)
    if url.startswith("sqlite"):
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                return work(conn)
        finally:
            engine.dispose()
    async_engine = create_async_engine(url)
    try:
        async with async_engine.begin() as async_conn:
            return await async_conn.run_sync(work)
    finally:
        await async_engine.dispose()


async def test_an_old_database_keeps_its_messages_and_their_cost_is_unknown(db_url: str) -> None:
    await run_on(db_url, _as_version_14)

    async with SQLStorage(db_url) as storage:
        transcript = await storage.transcript("w", "c")
        memory = await storage.memory("w", "a1", "c")
        (old,) = await storage.usage.groups("w")
        new = Message(chat_id="c", role="assistant", sender="a1", agent_id="a1", content="new",
                      input_tokens=1000, output_tokens=100, model="gpt-4o", cost_usd=0.0035)  # fmt: skip
        await storage.append_messages("w", [("a1", new)])
        groups = await storage.usage.groups("w")
        spent = await storage.usage.chat_cost("w", "c", "a1")

    assert [m.content for m in transcript] == [m.content for m in memory] == ["old answer"]
    assert (old.model, old.calls, old.input_tokens, old.cost_usd, old.unpriced_calls) == (None, 1, 40, None, 1)
    assert sorted((g.model or "", g.calls, g.cost_usd, g.unpriced_calls) for g in groups) == [
        ("", 1, None, 1),
        ("gpt-4o", 1, 0.0035, 0),
    ]
    assert spent == (0.0035, 0.0035)  # the old call's unknown cost counts nothing
    assert await run_on(db_url, migrations.current_version) == len(migrations.MIGRATIONS) == 15
