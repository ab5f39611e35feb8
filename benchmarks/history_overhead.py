"""History overhead: what a turn costs as a chat grows to 10,000 stored messages (SPEC §6).

SPEC §6: "with 10,000 stored messages in a chat, a turn's overhead stays under
20 ms", because storage work per turn must be append-only, never proportional
to the history. Three chats of one world are pre-filled through
``SQLStorage.append_messages`` (batches of 1,000) and then driven turn by turn
(``send("@a1 hi")`` + ``wait_until_idle``), interleaved round-robin:

* small -- ``--small`` transcript messages and as many agent-memory messages;
* large transcript, small memory -- ``--large`` transcript messages, but the
  agent remembers only ``--small``: the transcript size alone must not matter;
* large transcript + large memory -- ``--large`` of each. The agent's LLM
  input is built from its whole memory for the chat (SPEC R5), so here every
  request carries ~10,000 messages and the SDK itself is slow; what matters
  is the gap between the turn and the raw call with the same messages.

Every turn is paired with a raw SDK call replaying exactly the messages the
agent sent (``raw same``), and with a one-message raw call (``raw 1 msg``).
Overhead = turn - raw same, as the median of the per-turn differences. Every
``--turns-per-chat`` turns a variant moves to a freshly pre-filled chat, so
the sizes stay near nominal; the first turn in each chat also names the chat
(an extra model call, SPEC O5) and is not measured.

The large-memory chat measures ``--big-memory-turns`` turns (default 20, not
50): there, the ``openai`` SDK alone spends 1-2 s per call walking 10,000
messages in ``maybe_transform``, twice per measured turn (turn + replay).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass, field

from _harness import (
    WORLD,
    BenchWorld,
    RawClient,
    Stats,
    bench_world,
    header,
    is_title_request,
    request_params,
    small_request,
)

from agentworld.models import Message
from agentworld.testing.openai_wire import OpenAIWireServer

BATCH = 1_000


@dataclass
class Variant:
    label: str
    transcript: int
    memory: int
    turns: int
    chat: str = ""
    chats: int = 0
    turns_in_chat: int = 0
    prefill_time: float = 0.0
    samples: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    prompt_sizes: list[int] = field(default_factory=list)

    async def ensure_chat(self, bw: BenchWorld, *, per_chat: int) -> None:
        """Move to a freshly pre-filled chat when due; its first, title-naming turn is a warm-up."""
        if self.chat and self.turns_in_chat < per_chat:
            return
        start = time.perf_counter()
        self.chat = await bw.new_chat()
        await prefill(bw, self.chat, transcript=self.transcript, memory=self.memory)
        self.prefill_time += time.perf_counter() - start
        await bw.turn(self.chat, "@a1 hi")
        bw.server.clear()
        self.chats += 1
        self.turns_in_chat = 0


async def prefill(bw: BenchWorld, chat: str, *, transcript: int, memory: int) -> None:
    """Alternating human / agent messages: ``transcript`` in the chat, ``memory`` in a1's memory."""
    entries: list[tuple[str | None, Message]] = []
    for i in range(max(transcript, memory)):
        if i % 2 == 0:
            msg = Message(chat_id=chat, role="user", sender="human", content=f"@a1 hi {i}")
        else:
            msg = Message(
                chat_id=chat, role="assistant", sender="a1", agent_id="a1", content=f"echo: hi {i}"
            )
        if i < transcript:
            entries.append((None, msg))
        if i < memory:
            entries.append(("a1", msg.model_copy(update={"agent_id": "a1"})))
    for start in range(0, len(entries), BATCH):
        await bw.aw.storage.append_messages(WORLD, entries[start : start + BATCH])


async def measure_turn(bw: BenchWorld, raw: RawClient, variant: Variant) -> None:
    variant.turns_in_chat += 1
    bw.server.clear()
    start = time.perf_counter()
    await bw.turn(variant.chat, "@a1 hi")
    turn = time.perf_counter() - start
    bodies = [b for b in bw.server.requests if not is_title_request(b)]
    bw.server.clear()  # the big request bodies are kept by the server otherwise
    same = 0.0
    for body in bodies:
        start = time.perf_counter()
        await raw.call(request_params(body))
        same += time.perf_counter() - start
    start = time.perf_counter()
    await raw.call(small_request())
    small = time.perf_counter() - start
    variant.samples["turn"].append(turn)
    variant.samples["raw same"].append(same)
    variant.samples["raw small"].append(small)
    variant.samples["turn - raw same"].append(turn - same)
    variant.prompt_sizes.extend(len(b["messages"]) for b in bodies)


async def run(args: argparse.Namespace) -> None:
    variants = [
        Variant("small", args.small, args.small, args.turns),
        Variant("large transcript, small memory", args.large, args.small, args.turns),
        Variant("large transcript + large memory", args.large, args.large, args.big_memory_turns),
    ]
    with OpenAIWireServer() as server:
        raw = RawClient(server.base_url, stream=args.stream)
        async with bench_world(server, stream=args.stream) as bw:
            started = time.perf_counter()
            await raw.call(small_request())  # open the raw client's connection
            for i in range(max(v.turns for v in variants)):
                for variant in variants:  # round-robin: noise hits every variant alike
                    if i < variant.turns:
                        await variant.ensure_chat(bw, per_chat=args.turns_per_chat)
                        await measure_turn(bw, raw, variant)
            wall = time.perf_counter() - started
        await raw.aclose()
    report(args, variants, wall)


def report(args: argparse.Namespace, variants: list[Variant], wall: float) -> None:
    header(
        "Agent World history overhead (SPEC §6: overhead < 20 ms at 10,000 stored messages)",
        mode="streaming" if args.stream else "non-streaming",
        chats=(
            f"a fresh pre-filled chat every {args.turns_per_chat} measured turns; "
            "its first turn (which names the chat) is not measured"
        ),
        wall_time=f"{wall:.1f} s",
    )
    for v in variants:
        s = {key: Stats.of(values) for key, values in v.samples.items()}
        sizes = v.prompt_sizes
        print(f"{v.label}: transcript {v.transcript:,}, a1 memory {v.memory:,} messages")
        print(
            f"  ({v.chats} chat(s), pre-filled in {v.prefill_time:.1f} s by append_messages "
            f"in batches of {BATCH:,}; "
            f"prompt {min(sizes):,}..{max(sizes):,} messages)"
        )
        print(s["raw same"].line("raw SDK call, same messages as the agent"))
        print(s["raw small"].line("raw SDK call, 1 message"))
        print(s["turn"].line("agent turn"))
        print(
            f"  overhead, median of (turn - raw same) ..... {s['turn - raw same'].median:8.2f} ms"
            f"   p90 {s['turn - raw same'].p90:8.2f} ms   (target < 20 ms)"
        )
        print(
            f"  turn median - raw 1-message median ........ "
            f"{s['turn'].median - s['raw small'].median:8.2f} ms"
        )
        print()
    base = Stats.of(variants[0].samples["turn - raw same"]).median
    print("Overhead growth against the small chat (median of turn - raw same):")
    for v in variants[1:]:
        grown_by = Stats.of(v.samples["turn - raw same"]).median - base
        print(f"  {v.label:<40} {grown_by:+8.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--small", type=int, default=10, help="messages in the small history")
    parser.add_argument("--large", type=int, default=10_000, help="messages in the large history")
    parser.add_argument("--turns", type=int, default=50, help="measured turns per variant")
    parser.add_argument(
        "--big-memory-turns",
        type=int,
        default=20,
        help="measured turns for the large-memory variant (~3 s each, SDK-bound)",
    )
    parser.add_argument(
        "--turns-per-chat", type=int, default=10, help="move to a fresh pre-filled chat after this"
    )
    parser.add_argument("--stream", action="store_true", help="streaming world and raw calls")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
