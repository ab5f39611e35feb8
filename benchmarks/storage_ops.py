"""Storage operations one agent turn makes, timed one by one (SPEC §6).

What is measured, against a throw-away SQLite file:

* ``world_and_agents`` -- the world and its agents (every routed message reads them);
* ``agent_and_memory`` -- one agent and its memory of one chat (``--memory`` messages);
* ``record_agent_step`` -- one assistant message appended to memory plus one LLM call counted;
* ``append_events`` -- one message event (a transcript row);
* ``get_chat`` -- a chat with its message count; and ``memory_since`` / ``chat_exists``,
  the runtime's cheaper incremental reads, when the store has them.

Why: a plain turn makes about ten such calls, and SPEC §6 leaves it well under a
millisecond for all of them together. Each operation runs ``--n`` times after a
warm-up; the median and p90 wall times of single awaited calls are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from _harness import percentile

from agentworld.models import Agent, Chat, Message, World
from agentworld.models.events import MessageEvent
from agentworld.storage.sql import SQLStorage

WORLD = "bench"
CHAT = "c1"


def _nothing(_conn: object) -> None:
    return None


def assistant(content: str) -> Message:
    return Message(chat_id=CHAT, role="assistant", sender="a1", agent_id="a1", content=content)


async def timed(
    label: str, op: Callable[[], Awaitable[object]], *, n: int, warmup: int
) -> tuple[str, float, float]:
    for _ in range(warmup):
        await op()
    samples: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        await op()
        samples.append((time.perf_counter() - start) * 1e6)
    return label, statistics.median(samples), percentile(samples, 0.9)


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="agentworld-bench-") as tmp:
        async with SQLStorage(f"sqlite:///{Path(tmp) / 'ops.db'}") as storage:
            await storage.create_world(World(name=WORLD))
            for name in ("a1", "a2", "a3"):
                await storage.create_agent(
                    Agent(world=WORLD, name=name, provider="openai", model="m")
                )
            await storage.create_chat(Chat(world=WORLD, chat_id=CHAT))
            # The memory read below: ``--memory`` rows in a1's memory of c1.
            await storage.append_messages(
                WORLD, [("a1", assistant(f"memory {i}")) for i in range(args.memory)]
            )
            # The appends go to another agent and chat, so the reads stay the same size. The
            # same message objects are stored again and again: only storage is timed.
            await storage.create_chat(Chat(world=WORLD, chat_id="sink"))

            step = [Message(chat_id="sink", role="assistant", sender="a2", content="step")]
            event = [
                MessageEvent(
                    world=WORLD,
                    message=Message(chat_id="sink", role="user", sender="human", content="hi"),
                )
            ]

            ops: list[tuple[str, Callable[[], Awaitable[object]]]] = [
                ("world_and_agents", lambda: storage.world_and_agents(WORLD)),
                (
                    f"agent_and_memory ({args.memory} messages)",
                    lambda: storage.agent_and_memory(WORLD, "a1", CHAT),
                ),
                (
                    "record_agent_step (1 message, 1 call)",
                    lambda: storage.record_agent_step(WORLD, "a2", step, llm_calls=1),
                ),
                ("append_events (1 message event)", lambda: storage.append_events(event)),
                ("get_chat (with its message count)", lambda: storage.get_chat(WORLD, CHAT)),
            ]
            if hasattr(storage, "memory_since"):
                ops.append(
                    (
                        "memory_since (nothing new)",
                        lambda: storage.memory_since(WORLD, "a1", CHAT, 1 << 40),
                    )
                )
            if hasattr(storage, "chat_exists"):
                ops.append(("chat_exists", lambda: storage.chat_exists(WORLD, CHAT)))
            # The floor: one hop to the database thread and back (``_run`` in older versions).
            unit = getattr(storage, "in_transaction", None) or getattr(storage, "_run", None)
            if unit is not None:
                ops.append(("empty unit of work (BEGIN, COMMIT)", lambda: unit(_nothing, write=False)))

            results = [await timed(label, op, n=args.n, warmup=args.warmup) for label, op in ops]

    print("Agent World storage operations (SQLite file)")
    print("=============================================")
    print(f"  runs: {args.n} of each after {args.warmup} warm-up calls")
    print()
    for label, median, p90 in results:
        print(f"  {label:<40} median {median:8.1f} us   p90 {p90:8.1f} us")
    total = sum(median for label, median, _ in results[:4])
    print()
    print(f"  sum of the first four medians: {total:.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=2000, help="measured calls per operation")
    parser.add_argument("--warmup", type=int, default=200, help="unmeasured calls first")
    parser.add_argument("--memory", type=int, default=20, help="messages in the memory read")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
