"""An event's token usage read from the log carries both spellings: the ``input_tokens`` it
always had and the ``inputTokens`` the chat and agent documents use."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentworld.models import Usage, World
from agentworld.models.events import SSEEvent
from agentworld.storage.connection import Connection
from agentworld.storage.event_log import EventLog, event_row, insert_log_rows
from agentworld.storage.sql import SQLStorage

BOTH = {"input_tokens": 12, "output_tokens": 5, "inputTokens": 12, "outputTokens": 5}


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(db_url) as store:
        await store.create_world(World(name="lab"))
        yield store


def _end(usage: Usage | None) -> SSEEvent:
    return SSEEvent(world="lab", phase="end", chat_id="c1", agent="alice", message_id="m1",
                    content="done", usage=usage)  # fmt: skip


async def _documents(storage: SQLStorage) -> list[dict[str, Any]]:
    return [e.document for e in (await EventLog(storage).after("lab", 0)).events]


async def test_a_stream_end_event_gives_its_usage_in_both_spellings(storage: SQLStorage) -> None:
    await EventLog(storage).append([_end(Usage(input_tokens=12, output_tokens=5)), _end(None)])

    with_usage, without = await _documents(storage)

    assert with_usage["usage"] == BOTH
    assert without["usage"] is None
    assert SSEEvent.model_validate(with_usage).usage == Usage(input_tokens=12, output_tokens=5)


async def test_an_event_stored_with_only_the_old_names_is_read_with_both(
    storage: SQLStorage,
) -> None:
    row = event_row(_end(Usage(input_tokens=12, output_tokens=5)))
    row["payload"] = {**row["payload"], "usage": {"input_tokens": 12, "output_tokens": 5}}

    def insert(conn: Connection) -> None:
        insert_log_rows(conn, [row])

    await storage.in_transaction(insert, write=True)

    (document,) = await _documents(storage)
    assert document["usage"] == BOTH
