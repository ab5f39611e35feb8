"""The relay of live token chunks to other processes: on PostgreSQL a turn's chunks go out on
the world's live channel, batched, under PostgreSQL's payload limit; a bus that publishes them
never waits on the database (chunks past what the relay holds are dropped, and a relay that
cannot send says so and goes on); on SQLite no relay runs at all.

Real parts: ``AgentWorld`` over a SQLite file or a PostgreSQL database, the loopback OpenAI wire
server streaming its answer, a raw ``LISTEN`` connection as another process would hold.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from agentworld.agent_world import AgentWorld
from agentworld.events.bus import EventBus
from agentworld.events.live_relay import QUEUE_LIMIT, LiveRelay
from agentworld.events.log_listener import LogListener, connect_args
from agentworld.models.events import SSEEvent
from agentworld.storage.live_notes import (
    PAYLOAD_LIMIT,
    live_channel,
    notify_live,
    payloads,
    read_payload,
    sender,
)
from agentworld.storage.sql import SQLStorage
from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from agentworld.testing.postgres import create_migrated_database

ANSWER = "a streamed answer, four characters at a time, paced by the loopback model"

_numbers = itertools.count()


@pytest.fixture
def pg_url(postgres_server: str) -> str:
    return create_migrated_database(postgres_server, f"relay{os.getpid()}_{next(_numbers)}")


def _chunk(content: str, n: int = 0) -> SSEEvent:
    return SSEEvent(world="w", phase="chunk", chat_id="c1", agent="a1", message_id="m1",
                    content=content, event_id=f"evt_{n}")  # fmt: skip


def test_chunks_are_packed_under_the_payload_limit_and_a_long_one_is_cut() -> None:
    documents = [_chunk("x" * 20_000, 0).model_dump(mode="json", by_alias=True)]
    documents += [_chunk(f"é{n}", n + 1).model_dump(mode="json", by_alias=True) for n in range(200)]

    texts = payloads(documents)

    assert all(len(text.encode()) < PAYLOAD_LIMIT for text in texts)
    read = [read_payload(text) for text in texts]
    assert all(r is not None and r[0] == sender() for r in read)
    events = [e for r in read if r is not None for e in r[1]]
    assert "".join(e["content"] for e in events) == "x" * 20_000 + "".join(f"é{n}" for n in range(200))
    assert len(texts) < len(events)  # packed: not one payload per chunk
    assert len({json.loads(text)["n"] for text in texts}) == len(texts)  # never folded by PostgreSQL


async def _streamed_turn(url: str, llm: OpenAIWireServer) -> tuple[int, set[str]]:
    """Send a message to a streaming agent; the chunks its bus carried and the names of the
    tasks that ran meanwhile."""
    async with AgentWorld(url) as aw:
        await aw.create_world("w", streaming=True)
        await aw.create_agent("w", "a1", provider="openai", model="m", base_url=llm.base_url)
        runtime = await aw.runtime("w")
        chunks = 0

        def count(event: Any) -> None:
            nonlocal chunks
            chunks += isinstance(event, SSEEvent) and event.phase == "chunk"

        runtime.bus.subscribe(count, kinds=["sse"])
        names: set[str] = set()

        async def watch() -> None:
            while True:
                names.update(task.get_name() for task in asyncio.all_tasks())
                await asyncio.sleep(0.01)

        watching = asyncio.create_task(watch())
        try:
            result = await aw.send("w", "@a1 go", timeout=30)
        finally:
            watching.cancel()
        assert [m.content for m in result.messages][-1] == ANSWER
        return chunks, names


def test_no_relay_runs_on_sqlite(tmp_path: Path) -> None:
    with OpenAIWireServer(responder=lambda _body: Reply.text(ANSWER, chunk_delay=0.01)) as llm:
        chunks, names = asyncio.run(_streamed_turn(f"sqlite:///{tmp_path / 'aw.db'}", llm))

    assert chunks > 5
    assert not any(name.startswith("live-relay") for name in names)


def test_a_turn_on_postgresql_relays_its_chunks_in_batches(pg_url: str) -> None:
    async def run() -> tuple[int, set[str], list[str]]:
        listening = await asyncpg.connect(**connect_args(pg_url))
        got: list[str] = []
        await listening.add_listener(live_channel("w"), lambda _c, _p, _ch, payload: got.append(payload))
        try:
            with OpenAIWireServer(responder=lambda _body: Reply.text(ANSWER, chunk_delay=0.01)) as llm:
                chunks, names = await _streamed_turn(pg_url, llm)
            await asyncio.sleep(0.3)
        finally:
            await listening.close()
        return chunks, names, got

    chunks, names, got = asyncio.run(run())

    assert any(name.startswith("live-relay") for name in names)
    events = [e for payload in got if (r := read_payload(payload)) for e in r[1]]
    assert "".join(e["content"] for e in events) == ANSWER
    assert len(got) < chunks / 3  # batched: the chunks gathered meanwhile go as one
    assert {e["phase"] for e in events} == {"chunk"}


def test_publishing_chunks_never_waits_for_the_relay(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def run() -> tuple[float, int, list[str], int]:
        listening = await asyncpg.connect(**connect_args(pg_url))
        got: list[str] = []
        await listening.add_listener(live_channel("w"), lambda _c, _p, _ch, payload: got.append(payload))
        async with SQLStorage(pg_url) as storage:
            bus = EventBus("w")
            relay = LiveRelay(storage, "w")
            bus.subscribe(relay.on_event, kinds=["sse"])
            started = time.monotonic()
            for n in range(QUEUE_LIMIT + 1000):
                await bus.publish(_chunk(f"{n},", n))
            took = time.monotonic() - started
            await asyncio.sleep(0.5)
            await relay.aclose()
        # A storage that is gone: the relay says so once and the bus goes on.
        closed = LiveRelay(storage, "w")
        bus.subscribe(closed.on_event, kinds=["sse"])
        await bus.publish(_chunk("after", 0))
        await asyncio.sleep(0.3)
        await closed.aclose()
        await listening.close()
        return took, relay.dropped, got, QUEUE_LIMIT

    with caplog.at_level(logging.WARNING, logger="agentworld.events"):
        took, dropped, got, limit = asyncio.run(run())

    assert dropped >= 1000  # the relay had no turn of the loop: what it could not hold went
    events = [e for payload in got if (r := read_payload(payload)) for e in r[1]]
    assert "".join(e["content"] for e in events) == "".join(f"{n}," for n in range(limit))  # in order
    assert took < 5.0
    assert any("not relayed" in r.message for r in caplog.records)


def test_a_listener_hands_over_other_processes_chunks_and_skips_its_own(pg_url: str) -> None:
    async def run() -> list[list[dict[str, Any]]]:
        taken: list[list[dict[str, Any]]] = []
        came = asyncio.Event()

        def take(documents: list[dict[str, Any]]) -> None:
            taken.append(documents)
            came.set()

        listener = LogListener(pg_url)
        await listener.start()
        await listener.watch_live("W", take)  # names are case-folded: one channel
        own = payloads([_chunk("mine").model_dump(mode="json", by_alias=True)])
        other = json.dumps({"from": "elsewhere", "n": 0,
                            "events": [_chunk("theirs").model_dump(mode="json", by_alias=True)]})
        async with SQLStorage(pg_url) as storage:
            await storage.in_transaction(
                functools.partial(notify_live, world="w", texts=[*own, other, "not ours"]), write=False
            )
        async with asyncio.timeout(10):
            await came.wait()
        await asyncio.sleep(0.2)  # anything else would have come by now
        await listener.unwatch_live("W", take)
        await listener.aclose()
        return taken

    taken = asyncio.run(run())

    assert [[d["content"] for d in documents] for documents in taken] == [["theirs"]]
