"""Concurrent chats: many chats answered at once by one process, nothing lost (SPEC §6).

SPEC §6 asks for "1,000 concurrent chats on one process without errors or lost
messages". This opens ``--chats`` chats in one world, publishes one human
message into every chat at the same moment (``@a1 hi``, or ``hello everyone``
with ``--agents K`` > 1 so that all K agents answer), then waits until every
chat is idle. It reports wall time and turns per second, the latency of the
answers, how many model requests reached the loopback server (each chat's
first exchange also asks for a title, SPEC O5; retries would show up as
extras), every ``system`` event the runtime published, and finally checks
storage: every chat must hold its human message and exactly one answer from
each agent ("lost: 0, duplicated: 0").
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter

from _harness import PLAIN_MODEL, WORLD, BenchWorld, Stats, bench_world, header

from agentworld.models.events import MessageEvent, SystemEvent, WorldEvent
from agentworld.testing.openai_wire import OpenAIWireServer


class Watcher:
    """Bus subscriber: when each agent answer was published, and every system event."""

    def __init__(self, agents: set[str]) -> None:
        self.agents = agents
        self.start = 0.0
        self.answer_latencies: list[float] = []
        self.system_events: list[SystemEvent] = []

    def __call__(self, event: WorldEvent) -> None:
        if isinstance(event, SystemEvent):
            self.system_events.append(event)
        elif isinstance(event, MessageEvent):
            message = event.message
            if message.role == "assistant" and message.sender in self.agents:
                self.answer_latencies.append(time.perf_counter() - self.start)


async def verify(bw: BenchWorld, chats: list[str], agents: list[str]) -> Counter[str]:
    """Count, from storage, what every chat should hold and what it holds instead."""
    counts: Counter[str] = Counter()
    for chat in chats:
        transcript = await bw.aw.storage.transcript(WORLD, chat)
        humans = sum(1 for m in transcript if m.role == "user" and m.sender == "human")
        answers = Counter(
            m.sender for m in transcript if m.role == "assistant" and m.sender in agents
        )
        counts["lost"] += max(0, 1 - humans) + sum(max(0, 1 - answers[a]) for a in agents)
        counts["duplicated"] += max(0, humans - 1) + sum(max(0, answers[a] - 1) for a in agents)
        counts["system messages in transcripts"] += sum(1 for m in transcript if m.role == "system")
        counts["chats complete"] += humans == 1 and all(answers[a] == 1 for a in agents)
    return counts


async def run(args: argparse.Namespace) -> None:
    agents = [f"a{i}" for i in range(1, args.agents + 1)]
    text = "@a1 hi" if args.agents == 1 else "hello everyone"
    watcher = Watcher(set(agents))
    with OpenAIWireServer() as server:
        async with bench_world(
            server, stream=args.stream, agents=[(a, PLAIN_MODEL) for a in agents]
        ) as bw:
            bw.runtime.bus.subscribe(watcher, kinds=["system", "message"], name="bench-watcher")
            started = time.perf_counter()
            chats = [await bw.new_chat() for _ in range(args.chats)]
            setup = time.perf_counter() - started

            server.clear()
            watcher.start = time.perf_counter()
            await asyncio.gather(*(bw.runtime.send(chat, text) for chat in chats))
            sent = time.perf_counter() - watcher.start
            timed_out = False
            try:
                await bw.runtime.wait_until_idle(timeout=args.timeout)
            except TimeoutError:
                timed_out = True
            wall = time.perf_counter() - watcher.start
            requests = len(server.requests)

            started = time.perf_counter()
            counts = await verify(bw, chats, agents)
            verify_time = time.perf_counter() - started

    turns = args.chats * args.agents
    header(
        "Agent World concurrent chats (SPEC §6: 1,000 chats, no errors, nothing lost)",
        mode="streaming" if args.stream else "non-streaming",
        chats=f"{args.chats:,}, {args.agents} agent(s), message {text!r} into each",
        chat_setup=f"{setup:.1f} s ({setup / args.chats * 1000:.2f} ms per chat)",
    )
    print(f"  all {args.chats:,} messages published in {sent:.2f} s")
    state = f"TIMED OUT after {args.timeout:.0f} s" if timed_out else "all chats idle"
    print(f"  {state}: wall time {wall:.2f} s from first send")
    print(f"  turns: {turns:,} expected, {len(watcher.answer_latencies):,} answers published")
    print(f"  throughput: {len(watcher.answer_latencies) / wall:.1f} turns/s")
    print(Stats.of(watcher.answer_latencies).line("answer published after first send", width=36))
    print(
        f"  model requests: {requests:,} "
        f"(expected {turns + args.chats:,} = {turns:,} turns + {args.chats:,} chat titles)"
    )
    print()
    print(f"Storage check ({verify_time:.1f} s)")
    print(f"  chats complete: {counts['chats complete']:,} of {args.chats:,}")
    print(f"  lost: {counts['lost']}, duplicated: {counts['duplicated']}")
    print(f"  system messages in transcripts: {counts['system messages in transcripts']}")
    print(f"  system events: {len(watcher.system_events)}")
    by_text = Counter(f"[{e.level}] {e.text}" for e in watcher.system_events)
    for line, n in by_text.most_common(10):
        print(f"    {n:5d} x {line[:160]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--chats", type=int, default=1000, help="number of concurrent chats")
    parser.add_argument(
        "--agents", type=int, default=1, help="agents in the world; K > 1 sends 'hello everyone'"
    )
    parser.add_argument("--stream", action="store_true", help="streaming world")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="give up waiting for idle after this many s"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
