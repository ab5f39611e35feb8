"""Concurrent chats: many chats answered at once by one process, nothing lost (SPEC §6).

SPEC §6 asks for "1,000 concurrent chats on one process without errors or lost
messages" and issue 18 for ≥ 400 turns/s doing it. This opens ``--chats`` chats in one
world, publishes one human message into every chat at the same moment (``@a1 hi``, or
``hello everyone`` with ``--agents K`` > 1 so that all K agents answer), then waits until
every chat is idle; ``--rounds`` times (3), each into as many new chats, and the throughput
is their median (every round is shown: the first also pays for the world's warm-up, its
provider's client and connections, its statements' first use). It reports wall time and
turns per second, the latency of the answers,
how many model requests reached the model server (each chat's first exchange also asks
for a title, SPEC O5; retries would show up as extras), every ``system`` event the runtime
published, and finally checks storage: every chat must hold its human message and exactly
one answer from each agent ("lost: 0, duplicated: 0").

The model is ``agentworld.testing.openai_wire_async``: an asyncio server in a child
process that answers every request at once (the echo of ``OpenAIWireServer``, same wire
format). A server in this process, a thread per connection, was the bottleneck (the bare
SDK reached 81 requests/s against it) and its CPU was charged to the process measured.

Beside it, in the same run and against the same server, each with ``--chats`` requests at
once (``--no-baselines`` skips them):

* **raw SDK**: ``chat.completions.create`` on a default ``openai.AsyncOpenAI`` client, one
  request per turn (no title), the way an application without us would call it;
* **provider alone**: our provider's ``complete``, built as the world builds an agent's
  (``build_provider``: the client and pool every agent of an endpoint shares), no runtime:
  the HTTP side of a turn, without storage or routing.

CPU seconds are given per phase for this process and for the server's. ``--as-server`` first
sets this process's garbage collector as every CLI command and ``agentworld serve`` do
(``cli.common.tune_collector``): what the imports made is frozen out of its sight (without
that a full collection walks those 120,000-odd objects again, 60-100 ms each time, and how
many fall due during a phase changes its figure by up to a quarter), and young objects are
collected every 7,000 allocations instead of 700 (300 young collections a phase become 14).

    python concurrent_chats.py --chats 1000 [--rounds 3] [--as-server] [--stream] [--agents K]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from _harness import (
    PLAIN_MODEL,
    WORLD,
    BenchWorld,
    RawClient,
    Stats,
    bench_world,
    header,
    small_request,
)
from _serve import load_average

from agentworld.models import Agent
from agentworld.models.events import MessageEvent, SystemEvent, WorldEvent
from agentworld.providers.base import LLMRequest, PromptMessage
from agentworld.providers.registry import build_provider
from agentworld.testing.openai_wire_async import OpenAIWireProcess


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


async def verify(
    bw: BenchWorld[OpenAIWireProcess], chats: dict[str, int], agents: list[str]
) -> Counter[str]:
    """Count, from storage, what every chat should hold (``chats``: how many human messages
    went into it, each to be answered once by every agent) and what it holds instead."""
    counts: Counter[str] = Counter()
    for chat, sent in chats.items():
        transcript = await bw.aw.storage.transcript(WORLD, chat)
        humans = sum(1 for m in transcript if m.role == "user" and m.sender == "human")
        answers = Counter(
            m.sender for m in transcript if m.role == "assistant" and m.sender in agents
        )
        counts["lost"] += max(0, sent - humans) + sum(max(0, sent - answers[a]) for a in agents)
        counts["duplicated"] += max(0, humans - sent) + sum(
            max(0, answers[a] - sent) for a in agents
        )
        counts["system messages in transcripts"] += sum(1 for m in transcript if m.role == "system")
        counts["chats complete"] += humans == sent and all(answers[a] == sent for a in agents)
    return counts


async def second_turns(
    bw: BenchWorld[OpenAIWireProcess], args: argparse.Namespace, chats: list[str], text: str
) -> str:
    """One more message into every chat of the first run, all at once: chats under way,
    whose titles are given (one model request a turn)."""
    with Phase(bw.server) as phase:
        await asyncio.gather(*(bw.runtime.send(chat, text) for chat in chats))
        await bw.runtime.wait_until_idle(timeout=args.timeout)
    answered = 0
    for chat in chats:
        last = (await bw.aw.storage.transcript(WORLD, chat))[-1]
        answered += last.role == "assistant"
    return phase.line("2nd turns", answered, len(chats) - answered)


class Phase:
    """Wall time, this process's CPU and the server's CPU over one measured phase."""

    def __init__(self, server: OpenAIWireProcess) -> None:
        self.server = server
        self.wall = self.cpu = self.server_cpu = 0.0

    def __enter__(self) -> Phase:
        self.server.clear()
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        self._server_cpu = self.server.cpu_seconds()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu
        self.server_cpu = self.server.cpu_seconds() - self._server_cpu

    def line(self, label: str, done: int, errors: int) -> str:
        stats = self.server.stats()
        return (
            f"  {label:<16} {done / self.wall:7.1f} turns/s   {done:,} done, {errors} errors,"
            f" {stats['requests']:,} requests, {stats['connections']:,} connections used;"
            f" CPU {self.cpu:.1f} s here ({self.cpu / max(done, 1) * 1000:.2f} ms/turn),"
            f" {self.server_cpu:.1f} s server"
        )


async def burst(n: int, call: Callable[[], Awaitable[object]]) -> tuple[int, int, str]:
    """``n`` calls at once: how many succeeded, how many failed, and the first failure."""
    results = await asyncio.gather(*(call() for _ in range(n)), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    return n - len(errors), len(errors), repr(errors[0])[:160] if errors else ""


async def baselines(server: OpenAIWireProcess, args: argparse.Namespace) -> list[str]:
    """The raw SDK, then our provider alone, each with ``--chats`` requests at once."""
    lines = []
    raw = RawClient(server.base_url, stream=args.stream)
    try:
        with Phase(server) as phase:
            done, errors, first = await burst(args.chats, lambda: raw.call(small_request()))
        lines.append(phase.line("raw SDK", done, errors) + (f"\n    first error: {first}" if first else ""))
    finally:
        await raw.aclose()

    # Built as the world builds an agent's (registry, retry wrapper, pool settings).
    agent = Agent(world=WORLD, name="a1", provider="openai", model=PLAIN_MODEL, base_url=server.base_url)
    provider = build_provider(agent)
    request = LLMRequest(model=PLAIN_MODEL, messages=[PromptMessage(role="user", content="@a1 hi")])
    try:
        with Phase(server) as phase:
            done, errors, first = await burst(
                args.chats, lambda: provider.complete(request, stream=args.stream)
            )
        lines.append(phase.line("provider alone", done, errors) + (f"\n    first error: {first}" if first else ""))
    finally:
        await provider.aclose()
    return lines


@dataclass
class Round:
    """One burst of ``--chats`` new chats, each sent a message at once, waited on until idle."""

    number: int
    chats: list[str]
    setup: float
    sent: float
    phase: Phase
    line: str
    latencies: list[float]
    requests: int
    timed_out: bool


async def new_chats_round(
    bw: BenchWorld[OpenAIWireProcess],
    args: argparse.Namespace,
    text: str,
    watcher: Watcher,
    number: int,
) -> Round:
    started = time.perf_counter()
    chats = [await bw.new_chat() for _ in range(args.chats)]
    setup = time.perf_counter() - started
    watcher.answer_latencies, before = [], len(watcher.system_events)
    timed_out = False
    with Phase(bw.server) as phase:
        watcher.start = time.perf_counter()
        await asyncio.gather(*(bw.runtime.send(chat, text) for chat in chats))
        sent = time.perf_counter() - watcher.start
        try:
            await bw.runtime.wait_until_idle(timeout=args.timeout)
        except TimeoutError:
            timed_out = True
    latencies = watcher.answer_latencies
    # A turn that fails publishes a system event; that is the runtime's error count.
    errors = len(watcher.system_events) - before
    requests = bw.server.stats()["requests"]
    line = phase.line(f"Agent World r{number}", len(latencies), errors)
    return Round(number, chats, setup, sent, phase, line, latencies, requests, timed_out)


@dataclass
class PublicRun:
    chats: list[str]
    line: str


async def public_sends(
    bw: BenchWorld[OpenAIWireProcess], args: argparse.Namespace, text: str, agents: list[str]
) -> PublicRun:
    """The same turns in as many new chats, the way an application writes it: ``--chats``
    concurrent ``AgentWorld.send`` calls, each waiting for its answers (and, as a library
    process's does, until this process runs no chat: the titles too)."""
    chats = [await bw.new_chat() for _ in range(args.chats)]
    with Phase(bw.server) as phase:
        results = await asyncio.gather(
            *(bw.aw.send(WORLD, text, chat_id=chat, timeout=args.timeout) for chat in chats),
            return_exceptions=True,
        )
    sent = [r for r in results if not isinstance(r, BaseException)]
    answers = sum(
        1 for r in sent for m in r.messages if m.role == "assistant" and m.sender in agents
    )
    failed = len(results) - len(sent) + sum(len(r.errors) + r.timed_out for r in sent)
    return PublicRun(chats, phase.line("AgentWorld.send", answers, failed))


async def run(args: argparse.Namespace) -> None:
    agents = [f"a{i}" for i in range(1, args.agents + 1)]
    text = "@a1 hi" if args.agents == 1 else "hello everyone"
    watcher = Watcher(set(agents))
    with OpenAIWireProcess() as server:
        baseline_lines = [] if args.no_baselines else await baselines(server, args)
        async with bench_world(
            server, stream=args.stream, agents=[(a, PLAIN_MODEL) for a in agents]
        ) as bw:
            unwatch = bw.runtime.bus.subscribe(
                watcher, kinds=["system", "message"], name="bench-watcher"
            )
            rounds: list[Round] = []
            for number in range(1, args.rounds + 1):
                rounds.append(await new_chats_round(bw, args, text, watcher, number))
            unwatch()
            first = rounds[0]
            chats = first.chats
            public = await public_sends(bw, args, text, agents)
            ongoing = await second_turns(bw, args, chats, text) if args.agents == 1 else ""

            started = time.perf_counter()
            expected = {chat: 1 for r in rounds for chat in r.chats}
            expected |= {chat: 2 if ongoing else 1 for chat in chats} | dict.fromkeys(public.chats, 1)
            counts = await verify(bw, expected, agents)
            verify_time = time.perf_counter() - started

    turns = args.chats * args.agents
    header(
        "Agent World concurrent chats (SPEC §6: 1,000 chats, no errors, nothing lost)",
        mode="streaming" if args.stream else "non-streaming",
        process=(
            "as `agentworld serve` runs: imports frozen out of the collector, young objects"
            " collected every 7,000 allocations (tune_collector)"
            if args.as_server
            else "a library's: imports left to the collector (a full collection walks them)"
        ),
        chats=f"{args.chats:,}, {args.agents} agent(s), message {text!r} into each",
        rounds=f"{args.rounds}, each into {args.chats:,} new chats",
        chat_setup=f"{first.setup:.1f} s ({first.setup / args.chats * 1000:.2f} ms per chat)",
        model_server="openai_wire_async, a child process (answers at once)",
        load_average=load_average(),
    )
    for r in rounds:
        state = f"TIMED OUT after {args.timeout:.0f} s" if r.timed_out else "all chats idle"
        print(
            f"  round {r.number}: {args.chats:,} messages published in {r.sent:.2f} s;"
            f" {state} {r.phase.wall:.2f} s from first send; {len(r.latencies):,} of {turns:,}"
            f" answers published; {len(r.latencies) / r.phase.wall:.1f} turns/s"
        )
    rates = [len(r.latencies) / r.phase.wall for r in rounds]
    print(
        f"  throughput: {statistics.median(rates):.1f} turns/s"
        + (f" (median of {len(rounds)} rounds; the first pays for the world's warm-up)" if len(rounds) > 1 else "")
    )
    print(Stats.of(first.latencies).line("answer published after first send", width=36) + " (round 1)")
    print(
        f"  model requests: {first.requests:,} in round 1 "
        f"(expected {turns + args.chats:,} = {turns:,} turns + {args.chats:,} chat titles)"
    )
    print()
    print(f"Same server, {args.chats:,} at once")
    for line in [*baseline_lines, *(r.line for r in rounds), public.line, *([ongoing] if ongoing else [])]:
        print(line)
    print("  (Agent World rN, AgentWorld.send: new chats, a model request for the answer and one")
    print("  for the title each; 2nd turns: one more message into each chat of round 1)")
    print()
    print(f"Storage check ({verify_time:.1f} s, every run)")
    print(f"  chats complete: {counts['chats complete']:,} of {len(expected):,}")
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
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="bursts of --chats new chats through the runtime; throughput is their median",
    )
    parser.add_argument(
        "--no-baselines", action="store_true", help="skip the raw SDK and provider-alone bursts"
    )
    parser.add_argument(
        "--as-server",
        action="store_true",
        help="set the collector first, as `agentworld serve` does (tune_collector)",
    )
    args = parser.parse_args()
    if args.as_server:
        from agentworld.cli.common import tune_collector

        tune_collector()
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
