"""The cost of relaying live token chunks to other processes on PostgreSQL (SPEC L3, S1).

A process making a model call on PostgreSQL sends its chunks on the world's live channel
(``events/live_relay.py``). What it costs that process, measured on a throw-away PostgreSQL
cluster against the loopback OpenAI wire server:

* the turn's path -- ``EventBus.publish`` of one chunk with the relay subscribed beside the
  persistence subscriber, and without it (the relay only queues);
* a streamed turn -- ``AgentWorld.send`` of a turn whose answer streams ``--chunks`` chunks
  as fast as the loopback server writes them (the worst case: every chunk at once), with the
  relay as shipped and with its subscription taken off the world's bus (the baseline; a
  benchmark may reach into the bus, a test may not); interleaved, median and p90; and the
  notifications the relay sent per turn.

Run: python benchmarks/live_relay.py [--turns 40] [--chunks 500]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import asyncpg

from agentworld.agent_world import AgentWorld
from agentworld.events.bus import EventBus
from agentworld.events.log_listener import connect_args
from agentworld.events.persistence import persist_events
from agentworld.models.events import SSEEvent
from agentworld.storage.live_notes import live_channel
from agentworld.storage.sql import SQLStorage
from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from agentworld.testing.postgres import create_migrated_database, postgres_cluster


def _chunk(n: int) -> SSEEvent:
    return SSEEvent(world="w", phase="chunk", chat_id="c", agent="a1", message_id="m", content=f"{n:04d}")


async def publish_cost(url: str, count: int) -> tuple[float, float]:
    """Microseconds per chunk published: without, then with the relay subscribed."""
    async with SQLStorage(url) as storage:
        from agentworld.events.live_relay import LiveRelay

        results = []
        for relayed in (False, True):
            bus = EventBus("w")
            persist_events(bus, storage)
            relay = LiveRelay(storage, "w")
            if relayed:
                bus.subscribe(relay.on_event, kinds=["sse"], name="live-relay")
            best = float("inf")
            for _ in range(5):
                started = time.perf_counter()
                for n in range(count):
                    await bus.publish(_chunk(n))
                best = min(best, (time.perf_counter() - started) / count * 1e6)
                await asyncio.sleep(0.2)  # the relay sends what it queued
            await relay.aclose()
            results.append(best)
        return results[0], results[1]


async def streamed_turns(url: str, llm: OpenAIWireServer, turns: int) -> dict[str, Any]:
    async with AgentWorld(url) as aw:
        await aw.create_world("w", streaming=True, turn_limit=1000)
        await aw.create_agent("w", "a1", provider="openai", model="m", base_url=llm.base_url)
        runtime = await aw.runtime("w")
        relayed = [s for s in runtime.bus._subscriptions if s.name == "live-relay"]
        plain = [s for s in runtime.bus._subscriptions if s.name != "live-relay"]
        listening = await asyncpg.connect(**connect_args(url))
        notes: list[int] = []
        await listening.add_listener(live_channel("w"), lambda *_a: notes.append(1))
        times: dict[str, list[float]] = {"relay": [], "none": []}
        sent_per_turn: list[int] = []
        for n in range(turns + 3):
            for variant in ("relay", "none"):
                runtime.bus._subscriptions = relayed + plain if variant == "relay" else plain
                runtime.bus._subscriptions.sort(key=lambda s: s.order)
                chat = (await runtime.new_chat()).chat_id
                before = len(notes)
                started = time.perf_counter()
                await aw.send("w", "@a1 go", chat_id=chat, timeout=60)
                took = time.perf_counter() - started
                await asyncio.sleep(0.15)
                if n >= 3:  # warm-up rounds left out
                    times[variant].append(took * 1000)
                    if variant == "relay":
                        sent_per_turn.append(len(notes) - before)
        await listening.close()
    return {
        variant: (statistics.median(ms), statistics.quantiles(ms, n=10)[-1]) for variant, ms in times.items()
    } | {"notifies": statistics.median(sent_per_turn)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--chunks", type=int, default=500)
    args = parser.parse_args()
    answer = "abcd" * args.chunks
    with postgres_cluster() as server, OpenAIWireServer(
        responder=lambda _body: Reply.text(answer, chunk_size=4)
    ) as llm:
        url = create_migrated_database(server, "live_relay_bench")
        without, with_relay = asyncio.run(publish_cost(url, 2000))
        print(f"publish one chunk: {without:.1f} us without the relay, {with_relay:.1f} us with it")
        figures = asyncio.run(streamed_turns(url, llm, args.turns))
        for variant in ("none", "relay"):
            median, p90 = figures[variant]
            print(f"streamed turn ({args.chunks} chunks), relay {variant:>5}: median {median:.1f} ms, p90 {p90:.1f} ms")
        print(f"notifications per turn (relay): {figures['notifies']:.0f}")


if __name__ == "__main__":
    main()
