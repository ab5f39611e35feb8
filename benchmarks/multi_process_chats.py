"""Many chats over several processes on one database: throughput, nothing lost or duplicated.

The durable-chats contract measured from outside: ``--processes`` worker processes open the
same database (a temporary SQLite file, or ``--db URL``) and each posts one human message into
every one of ``--chats`` chats at once — so every chat gets one message per process, from
processes racing for its lease — then waits until each of its chats is idle. One loopback
OpenAI-compatible server (instant answers) serves them all. Reported: wall time from the
first post to the last worker done, turns per second, and a storage check: every chat must
hold exactly one answer per message, each replying to a distinct message ("lost: 0,
duplicated: 0"), and one title.

    python benchmarks/multi_process_chats.py                   # 1,000 chats x 4 processes
    python benchmarks/multi_process_chats.py --chats 200 --processes 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from agentworld import AgentWorld
from agentworld.runtime.titles import TITLE_INSTRUCTION
from agentworld.testing.openai_wire import OpenAIWireServer, Reply

WORLD = "bench"


async def setup(db: str, base_url: str, chats: int) -> list[str]:
    async with AgentWorld(db) as aw:
        await aw.create_world(WORLD, turn_limit=10_000, streaming=False)
        await aw.create_agent(
            WORLD, "a1", provider="openai", model="m", base_url=base_url, api_key_env="BENCH_KEY"
        )
        runtime = await aw.runtime(WORLD)
        return [(await runtime.new_chat()).chat_id for _ in range(chats)]


async def worker(db: str, index: int, chats: list[str]) -> None:
    async with AgentWorld(db) as aw:
        runtime = await aw.runtime(WORLD)
        await asyncio.gather(*(runtime.send(chat, f"@a1 hello from {index}") for chat in chats))
        for chat in chats:
            await runtime.wait_until_idle(chat)
        await runtime.wait_until_idle()


async def verify(db: str, chats: list[str], processes: int) -> Counter[str]:
    counts: Counter[str] = Counter()
    async with AgentWorld(db) as aw:
        for chat in chats:
            transcript = await aw.storage.transcript(WORLD, chat)
            asked = {m.message_id for m in transcript if m.sender == "human"}
            replies = Counter(m.reply_to_message_id for m in transcript if m.sender == "a1")
            counts["messages"] += len(asked)
            counts["lost"] += sum(1 for m in asked if replies[m] == 0) + max(0, processes - len(asked))
            counts["duplicated"] += sum(n - 1 for n in replies.values() if n > 1)
            counts["errors in transcripts"] += sum(1 for m in transcript if m.role == "system")
            counts["titled"] += (await aw.storage.chat_is_titled(WORLD, chat))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--chat-file", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker is not None:
        chats = json.loads(Path(args.chat_file).read_text())
        asyncio.run(worker(args.db, args.worker, chats))
        return

    titles = Counter[str]()

    def answer(body: dict[str, object]) -> Reply:
        messages = body["messages"]
        assert isinstance(messages, list)
        if messages[0]["content"] == TITLE_INSTRUCTION:
            titles["requests"] += 1
            return Reply.text("A title")
        return Reply.text("hello back")

    with tempfile.TemporaryDirectory() as tmp, OpenAIWireServer(responder=answer) as server:
        db = args.db or f"sqlite:///{tmp}/bench.db"
        chats = asyncio.run(setup(db, server.base_url, args.chats))
        chat_file = Path(tmp) / "chats.json"
        chat_file.write_text(json.dumps(chats))
        env = {**os.environ, "BENCH_KEY": "unused", "AGENTWORLD_LLM_RETRIES": "1"}
        server.clear()
        started = time.perf_counter()
        workers = [
            subprocess.Popen(
                [sys.executable, __file__, "--db", db, "--worker", str(i), "--chat-file", str(chat_file)],
                env=env,
            )
            for i in range(args.processes)
        ]
        codes = [w.wait() for w in workers]
        wall = time.perf_counter() - started
        requests = len(server.requests)
        counts = asyncio.run(verify(db, chats, args.processes))

    turns = args.chats * args.processes
    print(f"Agent World: {args.chats:,} chats x {args.processes} processes on one database")
    print(f"  database: {'SQLite (temporary file)' if not args.db else args.db.split('@')[-1]}")
    print(f"  worker exit codes: {codes}")
    print(f"  wall time: {wall:.2f} s from the first post to the last worker done")
    print(f"  turns: {turns:,} expected; throughput {turns / wall:.1f} turns/s")
    print(f"  model requests: {requests:,} (expected {turns:,} turns + {args.chats:,} titles)")
    print(f"  messages stored: {counts['messages']:,}; lost: {counts['lost']}, "
          f"duplicated: {counts['duplicated']}; errors: {counts['errors in transcripts']}")
    print(f"  chats titled: {counts['titled']:,} of {args.chats:,}; title requests: {titles['requests']:,}")


if __name__ == "__main__":
    main()
