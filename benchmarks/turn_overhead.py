"""Turn overhead: a full agent turn against the bare SDK call it wraps (SPEC §6).

What is measured, against one instant loopback ``OpenAIWireServer``:

* plain turn -- ``AgentWorld.send(world, "@a1 hi", chat_id=...)``: message in, stored,
  routed, model called, answer stored and published, the ``SendResult`` read back;
* tool turn -- the same for ``@a2``, whose model asks for the built-in ``read_file`` of a
  small file in the world's working directory. The shipped policy allows it without
  approval, so the call is authorized, run, logged and its result stored, and the model
  answers: two model calls;
* raw SDK call -- right after each turn, the request the agent's first model call sent
  (same messages, same tools) is replayed with ``chat.completions.create``, the way anyone
  calls the SDK: the baseline of every ratio, for the tool turn too (SPEC §6 compares a
  turn with one tool call, two model calls, to one raw call). The same request is also
  sent with the SDK's low-level ``client.post``, which skips the SDK's per-message request
  transform, as Agent World's provider does, and on the HTTP transport the provider uses
  (its own for a plain ``http://`` endpoint, leaner than the SDK's default): the stricter
  floor, where a turn and its replay differ by the runtime's work alone.

Why: SPEC §6 asks for turn / raw <= 1.8 (plain) and <= 4.0 (one tool call); issue 18 for
<= 1.4 and <= 3.0. Every measured turn is turn ``--depth`` (default 2) of a fresh chat: a
deep chat would mostly measure the SDK's request transform (0.2-1 ms per message), which
the raw call pays and Agent World's provider skips, and that flatters us. The chat's first
turn also names it (an extra model call, SPEC O5); it is reported on its own, outside the
figures. Turns and raw calls are interleaved round-robin so machine noise hits every series
alike, and every tool turn is checked: two model calls, the second carrying the file.

Run: python benchmarks/turn_overhead.py [--turns 100] [--depth 2] [--stream]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from _harness import (
    PLAIN_MODEL,
    TOOL_MODEL,
    WORLD,
    BenchWorld,
    RawClient,
    Stats,
    bench_world,
    header,
    is_title_request,
    ratio,
    request_params,
    tool_result_seen,
    tool_then_text,
)

from agentworld.testing.openai_wire import OpenAIWireServer


@dataclass
class Series:
    """One kind of turn: its agent, its samples, and the chats' opening turns."""

    text: str
    calls: int
    samples: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    opening_turns: list[float] = field(default_factory=list)
    prompt_sizes: list[int] = field(default_factory=list)
    failed_checks: list[str] = field(default_factory=list)


async def fresh_chat(bw: BenchWorld, series: Series, depth: int) -> str:
    """A new chat with ``depth - 1`` exchanges in it; the first (which names it) is timed."""
    chat = (await bw.aw.new_chat(WORLD)).chat_id
    for n in range(depth - 1):
        start = time.perf_counter()
        await send(bw, chat, series.text)
        if n == 0:
            series.opening_turns.append(time.perf_counter() - start)
    return chat


async def send(bw: BenchWorld, chat: str, text: str) -> None:
    result = await bw.aw.send(WORLD, text, chat_id=chat, timeout=60)
    if result.errors or result.pending_approvals:
        raise RuntimeError(f"turn failed: {result.errors or result.pending_approvals}")


async def timed(coro: Any) -> float:
    start = time.perf_counter()
    await coro
    return time.perf_counter() - start


async def step(
    bw: BenchWorld,
    raw: RawClient,
    post: RawClient | None,
    series: Series,
    depth: int,
    record: bool,
) -> None:
    """One measured turn in a fresh chat, then its first model request replayed raw."""
    chat = await fresh_chat(bw, series, depth)
    bw.server.clear()
    turn = await timed(send(bw, chat, series.text))
    bodies = [b for b in bw.server.requests if not is_title_request(b)]
    params = request_params(bodies[0])
    replay = await timed(raw.call(params))
    replay_post = await timed(post.call(params)) if post is not None else None
    if not record:
        return
    series.samples["turn"].append(turn)
    series.samples["raw"].append(replay)
    if replay_post is not None:
        series.samples["raw post"].append(replay_post)
    series.samples["turn - raw"].append(turn - replay)
    series.prompt_sizes.extend(len(b["messages"]) for b in bodies)
    if len(bodies) != series.calls:
        series.failed_checks.append(f"{len(bodies)} model calls, expected {series.calls}")
    elif series.calls == 2 and not tool_result_seen(bodies[-1]):
        series.failed_checks.append("the second model call carried no read_file result")


async def run(args: argparse.Namespace) -> None:
    depth = max(2, args.depth)
    agents = (("a1", PLAIN_MODEL), ("a2", TOOL_MODEL))
    plain, tool = Series("@a1 hi", 1), Series("@a2 hi", 2)
    with OpenAIWireServer(responder=tool_then_text) as server:
        raw = RawClient(server.base_url, stream=args.stream)
        # client.post has no streaming form in the SDK: streaming runs compare with create only.
        post = (
            None
            if args.stream
            else RawClient(server.base_url, stream=False, low_level=True, our_transport=True)
        )
        async with bench_world(server, stream=args.stream, agents=agents) as bw:
            started = time.perf_counter()
            for i in range(args.warmup + args.turns):
                order = (plain, tool) if i % 2 == 0 else (tool, plain)
                for series in order:
                    await step(bw, raw, post, series, depth, record=i >= args.warmup)
            wall = time.perf_counter() - started
        await raw.aclose()
        if post is not None:
            await post.aclose()
    report(args, depth, plain, tool, wall)


def report(args: argparse.Namespace, depth: int, plain: Series, tool: Series, wall: float) -> None:
    header(
        "Agent World turn overhead (SPEC §6)",
        mode="streaming" if args.stream else "non-streaming",
        measured_turns=f"{args.turns} of each kind after {args.warmup} warm-up rounds",
        every_turn=f"turn {depth} of a fresh chat (its first turn, which names it, not measured)",
        prompt_messages_per_call=f"plain {_sizes(plain)}, tool {_sizes(tool)}",
        wall_time=f"{wall:.1f} s",
    )
    p = defaultdict(lambda: Stats.of([]), {k: Stats.of(v) for k, v in plain.samples.items()})
    t = defaultdict(lambda: Stats.of([]), {k: Stats.of(v) for k, v in tool.samples.items()})
    raw = p["raw"].median
    post_runs = p["raw post"].n > 0  # none when streaming: client.post has no streaming form
    print("Plain turn (one model call)")
    print(p["raw"].line("raw SDK create, the turn's request (baseline)"))
    if post_runs:
        print(p["raw post"].line("client.post on our transport, the turn's request"))
    print(p["turn"].line("agent turn (AgentWorld.send)"))
    print(
        f"  ratio turn / raw create ................. {ratio(p['turn'].median, raw):5.2f}"
        "   (SPEC <= 1.8, issue 18 <= 1.4)"
    )
    if post_runs:
        print(
            f"  ratio turn / client.post, our transport . "
            f"{ratio(p['turn'].median, p['raw post'].median):5.2f}"
        )
    print(
        f"  overhead, median of (turn - raw create) .. {p['turn - raw'].median:6.2f} ms"
        f"   p90 {p['turn - raw'].p90:6.2f} ms"
    )
    print()
    print("Tool turn (read_file, allowed by policy: two model calls and one real tool run)")
    print(t["turn"].line("agent tool turn (AgentWorld.send)"))
    print(
        f"  ratio tool turn / raw create (one call) . {ratio(t['turn'].median, raw):5.2f}"
        "   (SPEC <= 4.0, issue 18 <= 3.0)"
    )
    if post_runs:
        print(
            f"  ratio tool turn / client.post, our transp "
            f"{ratio(t['turn'].median, p['raw post'].median):5.2f}"
        )
    print(
        f"  overhead, tool turn median - 2 x raw create median: "
        f"{t['turn'].median - 2 * raw:6.2f} ms"
    )
    print()
    for series in (plain, tool):
        for failure in series.failed_checks[:3]:
            print(f"  CHECK FAILED ({series.text}): {failure}")
    if not plain.failed_checks and not tool.failed_checks:
        print(
            "  Checks: every turn made its model calls; every tool turn's second carried the file."
        )
    print()
    opening = Stats.of(plain.opening_turns + tool.opening_turns)
    print("Not in the figures above")
    print(opening.line("first turn of a chat (+ title model call)"))


def _sizes(series: Series) -> str:
    sizes = series.prompt_sizes
    return f"{min(sizes)}..{max(sizes)}" if sizes else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=100, help="measured turns of each kind")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured rounds first")
    parser.add_argument(
        "--depth", type=int, default=2, help="measure turn N (>= 2) of a fresh chat"
    )
    parser.add_argument("--stream", action="store_true", help="streaming world and raw calls")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
