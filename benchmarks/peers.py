"""Agent World beside the OpenAI Agents SDK and PydanticAI, on one loopback server (SPEC §6).

One process, one instant loopback ``OpenAIWireServer``, round-robin over eight series:

1. raw -- the ``openai`` SDK's ``chat.completions.create``, the baseline of every ratio;
2. Agent World, plain turn -- ``AgentWorld.send(world, "@a1 hi", chat_id=...)``: message in,
   stored, routed, model called, answer stored and published, ``SendResult`` read back;
3. Agent World, one-tool turn -- the same for ``@a2``: the model asks for the built-in
   ``read_file`` of a small file in the world's working directory (allowed by the shipped
   policy, so no approval), the tool really runs and is logged, the model answers;
4./5. the OpenAI Agents SDK (``Runner.run``) with a function tool that reads the same file;
6./7. PydanticAI (``Agent.run``) with the same tool;
8. the raw call's request sent with the SDK's low-level ``client.post`` instead, which skips
   the SDK's per-message request transform, as Agent World's provider does;
9. that request posted exactly as Agent World's provider posts it: on the very SDK client it
   builds (``sdk_client``: the SDK's own HTTP client, its pool sized for many chats, none of
   the SDK's platform headers) with ``client.post``, the body read as parsed JSON. Agent
   World's turn against this one is its overhead alone, the same request by the same code on
   both sides ("x floor").

Fair by construction:

* every system talks through the ``openai`` SDK's own HTTP client and transport (SPEC §6): the
  raw call and both peers on an ``openai.AsyncOpenAI`` with ``openai.DefaultAioHttpClient``, Agent World on the one
  its provider builds (the same client class, a smaller pool); nobody has a transport of its own;
* every client talks to the same server, and every answer costs the server the same: a fixed
  text ("Done.") or a fixed ``read_file`` call, fixed token counts, no echo;
* every measured turn is turn ``--depth`` (default 2) of its conversation, so every model
  request of a plain turn carries the same messages (system, user, answer, user) as the raw
  call. Agent World answers in a fresh chat after ``depth - 1`` unmeasured turns (its first
  turn also names the chat, an extra model call not wanted in the figures); the peers persist
  nothing, so they are handed the history of ``depth - 1`` earlier runs, made once
  (``to_input_list()`` / ``all_messages()``). Deeper conversations would mostly measure the
  SDK's per-message request transform, which the raw call and both peers pay (about 0.2-1 ms
  per message) and Agent World's provider skips -- that would flatter us;
* every agent has the same system prompt and, in both of its turns, a ``read_file`` tool
  (Agent World always offers its three built-ins: ``shell_cmd``, ``read_file``,
  ``list_files``), and the raw call sends the same one-tool spec;
* non-streaming everywhere; the Agents SDK's tracing (an export to OpenAI) is disabled.

Reported per variant: median and p90 wall time, the ratio of medians to the raw call (and to
the same request sent with the SDK's low-level ``client.post``, the stricter floor), and
CPU time per turn (``time.process_time`` deltas, mean; the whole process, so it includes the
loopback server's thread -- "beyond raw" subtracts the raw call's CPU once per model call).
Each turn is checked afterwards: the expected number of model calls, and in tool turns a
tool result holding the file's marker; a failed check is reported, never hidden.

With ``--chats N`` it also runs N plain turns at once per framework (each turn ``--depth`` of
its own conversation) and reports turns per second and anything lost. The raw SDK's own row
there is the ceiling of the in-process, thread-per-connection loopback server, not of any
client: read the others against it.

Run: pip install -e '.[bench]'; python benchmarks/peers.py [--turns 300] [--depth 2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import openai
from _harness import (
    NOTE_FILE,
    NOTE_TEXT,
    PLAIN_MODEL,
    READ_NOTE_ARGUMENTS,
    TOOL_MODEL,
    TURN_LIMIT,
    WORLD,
    Stats,
    default_client,
    is_title_request,
    ratio,
    tool_result_seen,
    wants_tool_call,
)

from agentworld import AgentWorld
from agentworld.providers.openai import DEFAULT_MAX_CONNECTIONS, sdk_client
from agentworld.providers.registry import OPENAI_TIMEOUT
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

SYSTEM_PROMPT = "You are a helpful assistant. Answer briefly."
FLOOR = "raw post as Agent World's provider posts"
AGENTS_SDK = "OpenAI Agents SDK"
PYDANTIC_AI = "PydanticAI"
ANSWER = Reply.text("Done.", prompt_tokens=20, completion_tokens=2)
TOOL_ANSWER = Reply.tools(
    ToolCallSpec(name="read_file", arguments=READ_NOTE_ARGUMENTS),
    prompt_tokens=20,
    completion_tokens=8,
)
READ_FILE_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a text file inside the working directory.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    },
}


def fixed_responder(body: dict[str, Any]) -> Reply:
    """The same two answers for every client: a ``read_file`` call or "Done."."""
    return TOOL_ANSWER if wants_tool_call(body) else ANSWER


# -- the variants ---------------------------------------------------------------------


@dataclass
class Variant:
    """One way of answering "hi" as turn number ``depth`` of a conversation: ``prepare`` brings
    a conversation to that point (not measured), ``turn`` answers once in it (measured)."""

    label: str
    calls: int
    """Model calls one measured turn must make."""
    prepare: Callable[[], Awaitable[None]]
    turn: Callable[[], Awaitable[None]]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    prompt_sizes: list[int] = field(default_factory=list)
    failed_checks: list[str] = field(default_factory=list)


async def _nothing() -> None:
    return None


def plain_request(depth: int) -> dict[str, Any]:
    """The body of the model request a plain turn at ``depth`` sends."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    for _ in range(depth - 1):
        messages += [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Done."}]
    messages.append({"role": "user", "content": "hi"})
    return {"model": PLAIN_MODEL, "messages": messages, "tools": [READ_FILE_SPEC]}


def raw_variant(client: openai.AsyncOpenAI, depth: int, *, low_level: bool = False) -> Variant:
    """The SDK called directly, with the messages a plain turn at ``depth`` sends."""
    from openai.types.chat import ChatCompletion

    body = plain_request(depth)

    async def turn() -> None:
        if low_level:
            await client.post("/chat/completions", body=body, cast_to=ChatCompletion)
        else:
            await client.chat.completions.create(**body)

    if low_level:
        return Variant("raw SDK client.post (no request transform)", 1, _nothing, turn)
    return Variant("raw openai SDK chat.completions.create", 1, _nothing, turn)


def floor_variant(client: openai.AsyncOpenAI, depth: int) -> Variant:
    """That request posted as Agent World's provider posts it, its answer's text read."""
    body = plain_request(depth)

    async def turn() -> None:
        answer: Any = await client.post("/chat/completions", body=body, cast_to=object)
        answer["choices"][0]["message"]["content"]  # read as the provider reads it

    return Variant(FLOOR, 1, _nothing, turn)


def agentworld_variant(aw: AgentWorld, agent: str, depth: int, *, tool: bool) -> Variant:
    """``AgentWorld.send`` in a fresh chat that already holds ``depth - 1`` exchanges."""
    chat = ""
    text = f"@{agent} hi"

    async def prepare() -> None:
        nonlocal chat
        chat = (await aw.new_chat(WORLD)).chat_id
        for _ in range(depth - 1):  # the first also names the chat (a model call)
            await turn()

    async def turn() -> None:
        result = await aw.send(WORLD, text, chat_id=chat, timeout=60)
        if result.errors or result.pending_approvals:
            raise RuntimeError(
                f"Agent World turn failed: {result.errors or result.pending_approvals}"
            )

    kind = "one-tool turn (read_file)" if tool else "plain turn"
    return Variant(f"Agent World, {kind}", 2 if tool else 1, prepare, turn)


PeerRun = Callable[[list[Any]], Awaitable[list[Any]]]
"""A peer answering "hi" after ``history``; returns the history with this run in it."""


def agents_sdk_run(client: openai.AsyncOpenAI, workdir: Path, model: str) -> PeerRun:
    """``Runner.run`` of an Agents SDK agent with a function tool that reads a file."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool

    @function_tool
    async def read_file(path: str) -> str:
        """Read a text file inside the working directory."""
        return (workdir / path).read_text()

    agent = Agent(
        name="a1",
        instructions=SYSTEM_PROMPT,
        model=OpenAIChatCompletionsModel(model=model, openai_client=client),
        tools=[read_file],
    )

    async def run_once(history: list[Any]) -> list[Any]:
        result = await Runner.run(agent, [*history, {"role": "user", "content": "hi"}])
        return result.to_input_list()

    return run_once


def pydantic_ai_run(client: openai.AsyncOpenAI, workdir: Path, model: str) -> PeerRun:
    """``Agent.run`` of a PydanticAI agent with a tool that reads a file."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    agent = Agent(
        OpenAIChatModel(model, provider=OpenAIProvider(openai_client=client)),
        instructions=SYSTEM_PROMPT,
    )

    @agent.tool_plain
    async def read_file(path: str) -> str:
        """Read a text file inside the working directory."""
        return (workdir / path).read_text()

    async def run_once(history: list[Any]) -> list[Any]:
        result = await agent.run("hi", message_history=history)
        return result.all_messages()

    return run_once


class PeerHistory:
    """The history of ``depth - 1`` runs of a peer, made once: the peers persist nothing, so
    every measured turn is handed the same conversation."""

    def __init__(self, run_once: PeerRun, depth: int) -> None:
        self.run_once = run_once
        self.depth = depth
        self.history: list[Any] | None = None

    async def prepare(self) -> None:
        if self.history is None:
            history: list[Any] = []
            for _ in range(self.depth - 1):
                history = await self.run_once(history)
            self.history = history

    async def turn(self) -> None:
        await self.run_once(self.history or [])


def peer_variant(label: str, run_once: PeerRun, depth: int, *, tool: bool) -> Variant:
    peer = PeerHistory(run_once, depth)
    kind = "one-tool turn" if tool else "plain turn"
    return Variant(f"{label}, {kind}", 2 if tool else 1, peer.prepare, peer.turn)


# -- the run --------------------------------------------------------------------------


async def measure(server: OpenAIWireServer, variant: Variant, *, record: bool) -> None:
    """One turn of ``variant``, timed; then check what reached the server."""
    await variant.prepare()
    server.clear()
    wall, cpu = time.perf_counter(), time.process_time()
    await variant.turn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if not record:
        return
    bodies = [b for b in server.requests if not is_title_request(b)]
    variant.wall.append(wall)
    variant.cpu.append(cpu)
    variant.prompt_sizes.extend(len(b["messages"]) for b in bodies)
    if len(bodies) != variant.calls:
        variant.failed_checks.append(f"{len(bodies)} model calls, expected {variant.calls}")
    elif variant.calls == 2 and not tool_result_seen(bodies[-1]):
        variant.failed_checks.append("the second model call carried no tool result with the file")


async def burst(
    server: OpenAIWireServer, label: str, n: int, turn: Callable[[int], Awaitable[object]]
) -> dict[str, Any]:
    """``n`` turns at once; throughput, and what went missing (errors, model calls short)."""
    server.clear()
    start = time.perf_counter()
    results = await asyncio.gather(*(turn(i) for i in range(n)), return_exceptions=True)
    wall = time.perf_counter() - start
    errors = [r for r in results if isinstance(r, BaseException)]
    calls = sum(1 for b in server.requests if not is_title_request(b))
    server.clear()
    return {
        "variant": label,
        "turns": n,
        "wall_s": wall,
        "turns_per_s": n / wall,
        "errors": len(errors),
        "first_error": repr(errors[0])[:200] if errors else None,
        "missing_model_calls": max(0, n - calls),
    }


async def concurrent_bursts(
    server: OpenAIWireServer, aw: AgentWorld, variants: list[Variant], n: int, depth: int
) -> list[dict[str, Any]]:
    """``n`` plain turns at once per framework, each turn ``depth`` of its own conversation.

    The raw call and the peers are stateless once their history is made, so their measured
    ``turn`` runs ``n`` times concurrently; Agent World needs ``n`` chats, each brought to
    ``depth - 1`` exchanges first (concurrently too, not measured).
    """
    rows = []
    for variant in variants:
        await variant.prepare()
        rows.append(
            await burst(server, variant.label.split(",")[0], n, lambda _i, v=variant: v.turn())
        )

    chats = [(await aw.new_chat(WORLD)).chat_id for _ in range(n)]
    for _ in range(depth - 1):
        await asyncio.gather(*(aw.send(WORLD, "@a1 hi", chat_id=c, timeout=600) for c in chats))

    async def aw_turn(i: int) -> None:
        result = await aw.send(WORLD, "@a1 hi", chat_id=chats[i], timeout=600)
        answers = [m for m in result.messages if m.role == "assistant" and m.sender == "a1"]
        if result.errors or len(answers) != 1:
            raise RuntimeError(f"{len(answers)} answers, errors {result.errors}")

    rows.insert(1, await burst(server, "Agent World", n, aw_turn))
    return rows


async def run(args: argparse.Namespace) -> dict[str, Any]:
    try:
        import agents
        import pydantic_ai  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"{exc}: install the peers with  pip install -e '.[bench]'") from None
    agents.set_tracing_disabled(True)
    depth = max(1, args.depth)

    with (
        tempfile.TemporaryDirectory(prefix="agentworld-peers-") as tmp,
        OpenAIWireServer(responder=fixed_responder) as server,
    ):
        workdir = Path(tmp)
        (workdir / NOTE_FILE).write_text(NOTE_TEXT)

        def client() -> openai.AsyncOpenAI:
            return default_client(server.base_url)

        clients = [client() for _ in range(3)]
        # The very client our provider builds, posting as it posts: the same request, the same code.
        ours = sdk_client(
            api_key="x",
            base_url=server.base_url,
            timeout=OPENAI_TIMEOUT,
            max_connections=DEFAULT_MAX_CONNECTIONS,
        )
        clients.append(ours)
        async with AgentWorld(f"sqlite:///{workdir / 'bench.db'}") as aw:
            await aw.create_world(WORLD, streaming=False, turn_limit=TURN_LIMIT, working_dir=tmp)
            for name, model in (("a1", PLAIN_MODEL), ("a2", TOOL_MODEL)):
                await aw.create_agent(
                    WORLD,
                    name,
                    provider="openai",
                    model=model,
                    base_url=server.base_url,
                    system_prompt=SYSTEM_PROMPT,
                )

            def sdk(model: str) -> PeerRun:
                return agents_sdk_run(clients[1], workdir, model)

            def pai(model: str) -> PeerRun:
                return pydantic_ai_run(clients[2], workdir, model)

            variants = [
                raw_variant(clients[0], depth),
                agentworld_variant(aw, "a1", depth, tool=False),
                peer_variant(AGENTS_SDK, sdk(PLAIN_MODEL), depth, tool=False),
                peer_variant(PYDANTIC_AI, pai(PLAIN_MODEL), depth, tool=False),
                agentworld_variant(aw, "a2", depth, tool=True),
                peer_variant(AGENTS_SDK, sdk(TOOL_MODEL), depth, tool=True),
                peer_variant(PYDANTIC_AI, pai(TOOL_MODEL), depth, tool=True),
                floor_variant(ours, depth),
                raw_variant(clients[0], depth, low_level=True),
            ]
            started = time.perf_counter()
            for i in range(args.warmup + args.turns):
                shift = i % len(variants)  # rotate the order so no variant always runs first
                for variant in variants[shift:] + variants[:shift]:
                    await measure(server, variant, record=i >= args.warmup)
            wall = time.perf_counter() - started
            concurrent = []
            if args.chats > 0:
                plain = [variants[0], variants[2], variants[3]]  # raw, Agents SDK, PydanticAI
                concurrent = await concurrent_bursts(server, aw, plain, args.chats, depth)
        for c in clients:
            await c.close()
    return summarize(args, variants, wall) | {"concurrent": concurrent}


def summarize(args: argparse.Namespace, variants: list[Variant], wall: float) -> dict[str, Any]:
    raw, post = variants[0], variants[-1]
    floor = next(v for v in variants if v.label == FLOOR)
    raw_wall, post_wall = Stats.of(raw.wall).median, Stats.of(post.wall).median
    floor_wall = Stats.of(floor.wall).median
    raw_cpu = _mean(raw.cpu) * 1000
    rows = []
    for v in variants:
        s = Stats.of(v.wall)
        cpu = _mean(v.cpu) * 1000
        rows.append(
            {
                "variant": v.label,
                "model_calls": v.calls,
                "n": s.n,
                "median_ms": s.median,
                "p90_ms": s.p90,
                "ratio_to_raw": ratio(s.median, raw_wall),
                "ratio_to_post": ratio(s.median, post_wall),
                "ratio_to_floor": ratio(s.median, floor_wall),
                "cpu_ms_per_turn": cpu,
                "cpu_ms_beyond_raw": cpu - v.calls * raw_cpu,
                "prompt_messages": [min(v.prompt_sizes), max(v.prompt_sizes)],
                "failed_checks": len(v.failed_checks),
                "first_failure": v.failed_checks[0] if v.failed_checks else None,
            }
        )
    return {
        "benchmark": "peers",
        "turns": args.turns,
        "warmup_rounds": args.warmup,
        "depth": args.depth,
        "load_average_at_end": list(os.getloadavg()),
        "wall_time_s": wall,
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "versions": {
            name: _version(name)
            for name in ("agentworld", "openai", "openai-agents", "pydantic-ai-slim")
        },
        "rows": rows,
    }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "-"


def print_table(doc: dict[str, Any]) -> None:
    title = "Agent World beside the OpenAI Agents SDK and PydanticAI (SPEC §6)"
    print(title)
    print("=" * len(title))
    versions = ", ".join(f"{k} {v}" for k, v in doc["versions"].items())
    load = ", ".join(f"{x:.1f}" for x in doc["load_average_at_end"])
    print(f"  {doc['machine']}; load average at the end {load}")
    print(f"  {versions}")
    print(
        f"  {doc['turns']} measured turns per variant after {doc['warmup_rounds']} warm-up rounds,"
        f" round-robin, non-streaming, one loopback server; every turn is turn {doc['depth']}"
        f" of its conversation; wall {doc['wall_time_s']:.1f} s"
    )
    print()
    head = (
        f"  {'variant':<42} {'calls':>5} {'median':>8} {'p90':>8} {'x raw':>6} {'x post':>6}"
        f" {'x floor':>7}"
        f" {'cpu/turn':>8} {'cpu>raw':>8} {'msgs':>5}"
    )
    print(head)
    print("  " + "-" * (len(head) - 2))
    for row in doc["rows"]:
        low, high = row["prompt_messages"]
        msgs = f"{low}" if low == high else f"{low}-{high}"
        print(
            f"  {row['variant']:<42} {row['model_calls']:>5} {row['median_ms']:>6.2f}ms"
            f" {row['p90_ms']:>6.2f}ms {row['ratio_to_raw']:>5.2f}x {row['ratio_to_post']:>5.2f}x"
            f" {row['ratio_to_floor']:>6.2f}x"
            f" {row['cpu_ms_per_turn']:>6.2f}ms {row['cpu_ms_beyond_raw']:>6.2f}ms {msgs:>5}"
        )
    print()
    print("  calls: model calls per turn. x raw: median / median of the raw create call (the")
    print("  baseline); x post: / median of the same request sent with client.post, skipping the")
    print("  SDK's request transform. x floor: / median of that request posted as Agent World's")
    print("  provider posts it, on its SDK client (both sides the same request by the same")
    print("  code: our overhead alone). cpu/turn: process CPU per")
    print("  turn, mean, including the loopback server's thread; cpu>raw: minus the raw call's CPU")
    print("  once per model call. msgs: messages per model request.")
    failures = [r for r in doc["rows"] if r["failed_checks"]]
    for row in failures:
        print(f"  CHECK FAILED {row['failed_checks']}x in {row['variant']}: {row['first_failure']}")
    if not failures:
        print(
            "  Checks: every measured turn made its model calls; every tool result held the file."
        )
    print()
    rows = {r["variant"]: r for r in doc["rows"]}
    print(
        "Targets: plain and one-tool turns below both peers, one-tool <= 3.0x;"
        " every system on the SDK's own HTTP stack"
    )
    for kind, ours_label, peer_labels in (
        (
            "plain",
            "Agent World, plain turn",
            ("OpenAI Agents SDK, plain turn", "PydanticAI, plain turn"),
        ),
        (
            "one-tool",
            "Agent World, one-tool turn (read_file)",
            ("OpenAI Agents SDK, one-tool turn", "PydanticAI, one-tool turn"),
        ),
    ):
        ours = rows[ours_label]["ratio_to_raw"]
        peers = {label.split(",")[0]: rows[label]["ratio_to_raw"] for label in peer_labels}
        verdict = "ahead of both" if all(ours < r for r in peers.values()) else "NOT ahead of both"
        listed = ", ".join(f"{name} {r:.2f}x" for name, r in peers.items())
        print(f"  {kind:<9} Agent World {ours:.2f}x; {listed} -> {verdict}")
    cpu = rows["Agent World, plain turn"]["cpu_ms_beyond_raw"]
    print(f"  {'cpu':<9} Agent World plain turn, beyond the raw call: {cpu:.2f} ms")
    beyond_floor = cpu + rows["raw openai SDK chat.completions.create"]["cpu_ms_per_turn"]
    beyond_floor -= rows[FLOOR]["cpu_ms_per_turn"]
    print(f"  {'':<9} and beyond the same request posted as our provider posts it: {beyond_floor:.2f} ms")
    floor = rows["Agent World, plain turn"]["ratio_to_floor"]
    floor_tool = rows["Agent World, one-tool turn (read_file)"]["ratio_to_floor"]
    print(
        f"  {'floor':<9} on one HTTP stack (x floor): plain {floor:.2f}x, one-tool {floor_tool:.2f}x;"
        f" that post / the SDK's client.post: {rows[FLOOR]['ratio_to_post']:.2f}x"
    )
    if doc["concurrent"]:
        print_concurrent(doc["concurrent"])


def print_concurrent(rows: list[dict[str, Any]]) -> None:
    n = rows[0]["turns"]
    print()
    print(f"Concurrent: {n:,} plain turns at once, one per conversation (nothing may be lost)")
    for row in rows:
        lost = row["errors"] + row["missing_model_calls"]
        print(
            f"  {row['variant']:<42} {row['wall_s']:6.2f} s  {row['turns_per_s']:7.1f} turns/s"
            f"   errors {row['errors']}, model calls missing {row['missing_model_calls']}"
            + (f"  LOST {lost}: {row['first_error']}" if lost else "")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=300, help="measured turns per variant")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured rounds first")
    parser.add_argument(
        "--depth",
        type=int,
        default=2,
        help="measure turn N of a conversation (Agent World's first turn also names the chat)",
    )
    parser.add_argument(
        "--chats",
        type=int,
        default=0,
        help="also run N plain turns at once per framework (the loopback server caps this)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON document instead")
    args = parser.parse_args()
    doc = asyncio.run(run(args))
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print_table(doc)


if __name__ == "__main__":
    main()
