"""Reading a long transcript over HTTP: ``GET /api/worlds/{w}/chats/{c}/messages`` on a chat of
10,000 messages (issue 15).

A chat is seeded through storage (``SQLStorage.append_messages``, batches of 500: what 10,000
turns would leave in the transcript, without running them), then ``agentworld serve`` answers
in a subprocess on a loopback port. Timed from this process with one keep-alive ``httpx``
client, round-robin so that load on the machine hits every series alike:

* the first page (``?limit=N``), a page from the middle (``?after=`` the 5,000th message's
  position) and the last page, for ``N`` = 100 and the route's default, 1,000;
* ``GET /health``, the server's floor (routing, the guard, one small JSON body);
* the same pages read straight from storage in this process (``EventLog.transcript_page``):
  the database's share.

    python benchmarks/transcript_page.py                    # SQLite, then PostgreSQL
    python benchmarks/transcript_page.py --backend sqlite --rounds 100 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import httpx
from _harness import Stats, header, percentile, ratio
from _serve import BACKEND_CHOICES, Backend, database, each_backend, load_average, served

from agentworld import AgentWorld
from agentworld.models import Message
from agentworld.storage.event_log import EventLog

WORLD = "bench"
SEED_BATCH = 500


async def seed(db: str, messages: int) -> str:
    """A chat of ``messages`` alternating human and agent messages; its id."""
    async with AgentWorld(db) as aw:
        await aw.create_world(WORLD, streaming=False)
        await aw.create_agent(WORLD, "a1", provider="scripted", model="echo")
        chat = (await aw.new_chat(WORLD)).chat_id
        for start in range(0, messages, SEED_BATCH):
            batch = [
                (None, _message(chat, n)) for n in range(start, min(start + SEED_BATCH, messages))
            ]
            await aw.storage.append_messages(WORLD, batch)
        return chat


async def positions(db: str, chat: str, counts: list[int]) -> list[int]:
    """The position (what ``?after=`` takes) of the ``k``-th message, for each ``k``."""
    async with AgentWorld(db) as aw:
        log = EventLog(aw.storage)
        return [
            (await log.transcript_page(WORLD, chat, limit=k)).next_after if k else 0 for k in counts
        ]


def _message(chat: str, n: int) -> Message:
    if n % 2 == 0:
        return Message(
            chat_id=chat, role="user", sender="human", content=f"@a1 question {n}: " + "words " * 30
        )
    return Message(
        chat_id=chat, role="assistant", sender="a1", agent_id="a1", content=f"answer {n}: " + "text " * 40
    )


def run_backend(backend: Backend, args: argparse.Namespace) -> dict[str, Any]:
    load_before = load_average()
    with database(backend, postgres_url=args.postgres_url) as db:
        started = time.perf_counter()
        chat = asyncio.run(seed(db, args.messages))
        seeded = time.perf_counter() - started
        n, half = args.messages, args.messages // 2
        limits = (100, 1000)
        wanted = [half, n, *(k for limit in limits for k in (limit, half + limit, n - limit))]
        at = dict(zip(wanted, asyncio.run(positions(db, chat, wanted)), strict=True))
        assert at[n] > at[n - 100], "the chat holds fewer messages than asked"
        base = f"/api/worlds/{WORLD}/chats/{chat}/messages"

        def pages(limit: int) -> dict[str, tuple[str, int]]:
            """Each page's path, and the ``nextAfter`` it must answer with."""
            return {
                f"first page, limit {limit}": (f"{base}?limit={limit}", at[limit]),
                f"middle page (?after=), limit {limit}": (
                    f"{base}?after={at[half]}&limit={limit}", at[half + limit]
                ),
                f"last page, limit {limit}": (f"{base}?after={at[n - limit]}&limit={limit}", at[n]),
            }

        requests = {"GET /health": ("/health", -1), **pages(100), **pages(1000)}
        times: dict[str, list[float]] = {name: [] for name in requests}
        sizes: dict[str, int] = {}
        with served(db) as server, httpx.Client(base_url=server.base_url, timeout=60) as client:
            for name, (path, expected_next) in requests.items():  # check, and warm up
                response = client.get(path)
                response.raise_for_status()
                sizes[name] = len(response.content)
                if expected_next >= 0:
                    assert response.json()["nextAfter"] == expected_next, name
            for _ in range(args.rounds):
                for name, (path, _next) in requests.items():
                    t0 = time.perf_counter()
                    response = client.get(path)
                    times[name].append(time.perf_counter() - t0)
                    assert response.status_code == 200
        storage = asyncio.run(_storage_reads(db, chat, at[half], args.rounds))

    health = Stats.of(times["GET /health"]).median
    rows = []
    for name, samples in {**times, **storage}.items():
        stats = Stats.of(samples)
        rows.append(
            {
                "request": name,
                "median_ms": round(stats.median, 3),
                "p90_ms": round(stats.p90, 3),
                "p99_ms": round(percentile([s * 1000 for s in samples], 0.99), 3),
                "bytes": sizes.get(name),
                "x_health": round(ratio(stats.median, health), 2),
            }
        )
    return {
        "backend": backend,
        "seed_seconds": round(seeded, 2),
        "load_before": load_before,
        "load_after": load_average(),
        "rows": rows,
    }


async def _storage_reads(db: str, chat: str, middle: int, rounds: int) -> dict[str, list[float]]:
    """The middle pages straight from storage in this process: what the database costs."""
    out: dict[str, list[float]] = {}
    async with AgentWorld(db) as aw:
        log = EventLog(aw.storage)
        limits = {f"storage read, middle page, limit {limit}": limit for limit in (100, 1000)}
        for name, limit in limits.items():  # warm up
            out[name] = []
            await log.transcript_page(WORLD, chat, after=middle, limit=limit)
        for _ in range(rounds):
            for name, limit in limits.items():
                t0 = time.perf_counter()
                await log.transcript_page(WORLD, chat, after=middle, limit=limit)
                out[name].append(time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=200, help="requests of each kind")
    parser.add_argument("--backend", choices=sorted(BACKEND_CHOICES), default="both")
    parser.add_argument("--postgres-url", help="a PostgreSQL server to use (default: a throw-away cluster)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    results = each_backend(args.backend, lambda backend: run_backend(backend, args))
    if args.json:
        print(json.dumps({"load_average": load_average(), "results": results}, indent=2))
        return
    header(
        f"GET transcript of a {args.messages:,}-message chat over HTTP",
        rounds=args.rounds,
        load_average=load_average(),
    )
    for result in results:
        print(
            f"{result['backend']} (seeded in {result['seed_seconds']} s; load average before"
            f" {result['load_before']}, after {result['load_after']})"
        )
        print(f"  {'request':<40} {'median':>9} {'p90':>9} {'p99':>9} {'bytes':>9} {'x health':>8}")
        for row in result["rows"]:
            size = f"{row['bytes']:,}" if row["bytes"] is not None else ""
            print(
                f"  {row['request']:<40} {row['median_ms']:7.2f}ms {row['p90_ms']:7.2f}ms"
                f" {row['p99_ms']:7.2f}ms {size:>9} {row['x_health']:8.2f}"
            )
        print()


if __name__ == "__main__":
    main()
