"""Scale-out: many chats over 1, 2 and 4 processes on one PostgreSQL, on both engines.

A model with a real model's latency (``--latency``, 200 ms a call: the asyncio loopback server
of ``agentworld.testing.openai_wire_async`` in a child process, spoken to through the official
SDK) answers ``--chats`` chats, ``--messages`` human messages each (a chat's next message is
sent when ``send`` returned for the last). Every configuration gets a fresh database on one
throwaway PostgreSQL cluster (``agentworld.testing.postgres``) and the same world: one agent,
``a1``, addressed by every message.

* **in-process engine**, ``--processes`` N: N processes, each an ``AgentWorld`` on the
  database sending its share of the chats (every N-th) with ``AgentWorld.send``. A process
  runs the chats it posts into (the post claims the chat's lease, ``storage/leases.py``), so
  these are N front ends that each run what reaches them, as N ``agentworld serve`` behind a
  load balancer would: the only way this engine spreads chats over processes.
* **Temporal engine**, N workers: a Temporal dev server (``agentworld.testing.temporal``) and
  N ``agentworld worker`` processes, ``AGENTWORLD_TEMPORAL`` set for every process; one sender
  process sends every chat's messages with the same ``AgentWorld.send`` (which hands them to
  Temporal and returns when each is handled).

Measured from the moment every process is ready: turns per second (wall time to the last
``send`` returned), p50 / p99 from a message to its answer by the stored timestamps (and as
the sender saw ``send`` return), CPU of the engine's processes per turn, how busy the whole
machine was. Then the database is counted: every human message must have exactly one answer
from ``a1``; anything lost, answered twice or in error fails the run (exit status 1).

    python benchmarks/scaleout.py                          # 1,000 chats; 1, 2, 4; both engines
    python benchmarks/scaleout.py --chats 50 --processes 1,2 --engines inprocess
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _harness import percentile
from _scaleout_sender import AGENT, WORLD
from _serve import load_average

from agentworld import AgentWorld
from agentworld.testing.openai_wire_async import OpenAIWireProcess
from agentworld.testing.postgres import create_migrated_database, postgres_cluster
from agentworld.testing.processes import stop_process

ENGINES = ("inprocess", "temporal")
TEMPORAL_VARIABLES = ("AGENTWORLD_TEMPORAL", "AGENTWORLD_TEMPORAL_TASK_QUEUE")


@dataclass
class Counts:
    """What the database holds against what was sent: the run's loss and duplicate check."""

    sent: int = 0
    stored: int = 0
    answered_once: int = 0
    lost: int = 0
    duplicated: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list, repr=False)
    span: float = 0.0
    """Seconds from the first stored message to the last stored answer."""

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.duplicated == 0 and self.errors == 0


async def count_answers(db: str, chats: list[str], messages: int) -> Counts:
    """Count, per chat, its human messages and ``a1``'s answers to each (by
    ``replyToMessageId``): a message with none is lost, every answer past the first is a
    duplicate, as is a human message stored twice; system messages are errors."""
    counts = Counts(sent=len(chats) * messages)
    first, last = float("inf"), float("-inf")
    async with AgentWorld(db) as aw:
        for chat in chats:
            transcript = await aw.storage.transcript(WORLD, chat)
            asked = [m for m in transcript if m.sender == "human" and m.role == "user"]
            answers: dict[str, list[Any]] = {m.message_id: [] for m in asked}
            for m in transcript:
                if m.sender == AGENT and m.role == "assistant" and m.reply_to_message_id in answers:
                    answers[m.reply_to_message_id].append(m)
            counts.stored += len(asked)
            counts.lost += max(0, messages - len(asked))
            counts.duplicated += max(0, len(asked) - messages)
            counts.errors += sum(1 for m in transcript if m.role == "system")
            for message in asked:
                replies = answers[message.message_id]
                counts.lost += not replies
                counts.duplicated += max(0, len(replies) - 1)
                counts.answered_once += len(replies) == 1
                first = min(first, message.created_at.timestamp())
                if replies:
                    counts.latencies.append((replies[0].created_at - message.created_at).total_seconds())
                    last = max(last, max(r.created_at.timestamp() for r in replies))
    counts.span = max(0.0, last - first)
    return counts


# -- one configuration ----------------------------------------------------------------


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of a live process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_ticks() -> tuple[int, int]:
    """Busy and total CPU ticks of the whole machine so far (``/proc/stat``)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


async def setup(db: str, base_url: str, chats: int) -> list[str]:
    async with AgentWorld(db) as aw:
        await aw.create_world(WORLD, turn_limit=10_000, streaming=False)
        await aw.create_agent(
            WORLD, AGENT, provider="openai", model="m", base_url=base_url, api_key_env="BENCH_KEY"
        )
        runtime = await aw.runtime(WORLD)
        return [(await runtime.new_chat()).chat_id for _ in range(chats)]


def child_env(home: str, temporal: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, "HOME": home, "BENCH_KEY": "unused", "AGENTWORLD_LLM_RETRIES": "1"}
    for name in ("AGENTWORLD_DB", *TEMPORAL_VARIABLES):
        env.pop(name, None)
    return env | temporal


@contextlib.contextmanager
def processes(argvs: list[list[str]], env: dict[str, str], logs: Path, name: str,
              *, pipes: bool) -> Iterator[list[subprocess.Popen[str]]]:
    """Start ``argvs`` (stderr to a log file each); stop whatever still runs on the way out."""
    started: list[subprocess.Popen[str]] = []
    try:
        for i, argv in enumerate(argvs):
            with (logs / f"{name}{i}.log").open("w") as log:
                pipe = subprocess.PIPE if pipes else subprocess.DEVNULL
                started.append(subprocess.Popen(argv, env=env, stdin=pipe, stdout=pipe,
                                                stderr=log, text=True))
        yield started
    finally:
        for process in started:
            stop_process(process)


def log_tails(logs: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(logs.glob("*.log"))
                     if p.read_text().strip())


async def wait_for_pollers(address: str, queue: str, workers: int, timeout: float) -> bool:
    """Until ``workers`` distinct workers poll ``queue`` for workflow tasks (or ``timeout``)."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
    from temporalio.client import Client

    client = await Client.connect(address)
    request = DescribeTaskQueueRequest(
        namespace="default", task_queue=TaskQueue(name=queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = await client.workflow_service.describe_task_queue(request)
        if len({p.identity for p in described.pollers}) >= workers:
            return True
        await asyncio.sleep(0.2)
    return False


def run_configuration(args: argparse.Namespace, engine: str, n: int, pg: str,
                      model: OpenAIWireProcess, temporal: str | None) -> dict[str, Any]:
    """One engine with ``n`` processes on a fresh database: run, measure, count."""
    db = create_migrated_database(pg, f"scaleout_{engine}_{n}_{os.getpid()}_{time.monotonic_ns() % 10**6}")
    chats = asyncio.run(setup(db, model.base_url, args.chats))
    sender = str(Path(__file__).resolve().with_name("_scaleout_sender.py"))
    with tempfile.TemporaryDirectory(prefix="agentworld-scaleout-") as tmp:
        logs = Path(tmp)
        variables = {}
        if engine == "temporal":
            assert temporal is not None
            queue = f"scaleout-{n}-{os.getpid()}-{time.monotonic_ns() % 10**6}"
            variables = {"AGENTWORLD_TEMPORAL": temporal, "AGENTWORLD_TEMPORAL_TASK_QUEUE": queue}
        env = child_env(tmp, variables)
        senders = n if engine == "inprocess" else args.senders
        shares = [[[i, c] for i, c in enumerate(chats)][k::senders] for k in range(senders)]
        argvs = []
        for k, share in enumerate(shares):
            (logs / f"share{k}.json").write_text(json.dumps(share))
            argvs.append([sys.executable, sender, "--share", str(logs / f"share{k}.json"), "--db", db,
                          "--messages", str(args.messages), "--rate", str(args.rate / senders)]
                         + (["--warm-runtime"] if engine == "inprocess" else [])
                         + (["--post"] if args.post else []))
        worker_argvs = [[sys.executable, "-m", "agentworld", "--db", db, "worker"]] * (
            n if engine == "temporal" else 0)
        with processes(worker_argvs, env, logs, "worker", pipes=False) as workers, \
                processes(argvs, env, logs, "sender", pipes=True) as running:
            for process in running:
                assert process.stdout is not None
                if process.stdout.readline().strip() != "ready":
                    raise RuntimeError(f"a sender did not start:\n{log_tails(logs)}")
            if workers and not asyncio.run(wait_for_pollers(temporal or "", variables[
                    "AGENTWORLD_TEMPORAL_TASK_QUEUE"], n, args.start_timeout)):
                raise RuntimeError(f"{n} workers did not poll their queue:\n{log_tails(logs)}")
            model.clear()
            busy0, total0 = machine_ticks()
            model_cpu, worker_cpu = model.cpu_seconds(), sum(cpu_of(w.pid) for w in workers)
            started = time.perf_counter()
            for process in running:
                assert process.stdin is not None
                process.stdin.write("go\n")
                process.stdin.flush()
            reports = []
            for process in running:
                try:
                    out, _ = process.communicate(timeout=args.timeout)
                except subprocess.TimeoutExpired as exc:
                    raise RuntimeError(f"senders still busy after {args.timeout:g} s:\n"
                                       f"{log_tails(logs)}") from exc
                if process.returncode != 0:
                    raise RuntimeError(f"a sender failed ({process.returncode}):\n{log_tails(logs)}")
                reports.append(json.loads(out.strip().splitlines()[-1]))
            wall = time.perf_counter() - started
            busy1, total1 = machine_ticks()
            worker_cpu = sum(cpu_of(w.pid) for w in workers if w.poll() is None) - worker_cpu
            model_cpu = model.cpu_seconds() - model_cpu
            requests = model.stats()["requests"]
        counts = asyncio.run(count_answers(db, chats, args.messages))
    sender_latencies = [x for r in reports for x in r["latencies"]]
    turns = counts.answered_once
    return {
        "engine": engine, "processes": n, "senders": senders, "chats": args.chats,
        "messages": args.messages, "turns": turns, "wall": wall, "turnsPerSecond": turns / wall,
        "p50": percentile(counts.latencies, 0.5), "p99": percentile(counts.latencies, 0.99),
        "senderP50": percentile(sender_latencies, 0.5), "senderP99": percentile(sender_latencies, 0.99),
        "storedSpan": counts.span, "modelRequests": requests,
        "cpuPerTurnMs": (sum(r["cpu"] for r in reports) + worker_cpu) / max(turns, 1) * 1000,
        "workerCpuPerTurnMs": worker_cpu / max(turns, 1) * 1000,
        "modelServerCpu": model_cpu,
        "machineBusy": (busy1 - busy0) / max(total1 - total0, 1),
        "sent": counts.sent, "stored": counts.stored, "lost": counts.lost,
        "duplicated": counts.duplicated, "errors": counts.errors,
        "problems": [p for r in reports for p in r["problems"]][:5],
        "ok": counts.ok and not any(r["problems"] for r in reports),
    }


def temporal_missing() -> str | None:
    """Why the Temporal engine cannot run here, or None (its CLI and ``agentworld worker``)."""
    from agentworld.testing.temporal import TemporalUnavailable, temporal_cli

    try:
        temporal_cli()
    except TemporalUnavailable as exc:
        return str(exc)
    help_run = subprocess.run([sys.executable, "-m", "agentworld", "worker", "--help"],
                              capture_output=True, text=True, timeout=60)
    return None if help_run.returncode == 0 else "this agentworld has no `worker` command"


def show(result: dict[str, Any]) -> None:
    verdict = "ok" if result["ok"] else "FAILED"
    print(f"  {result['engine']:<9} {result['processes']} proc  {result['turnsPerSecond']:7.1f} turns/s"
          f"  p50 {result['p50'] * 1000:7.0f} ms  p99 {result['p99'] * 1000:7.0f} ms"
          f"  (as the sender saw it: p50 {result['senderP50'] * 1000:.0f}, p99 {result['senderP99'] * 1000:.0f})"
          f"  CPU {result['cpuPerTurnMs']:.1f} ms/turn"
          + (f" (workers {result['workerCpuPerTurnMs']:.1f})" if result["engine"] == "temporal" else "")
          + f"  machine {result['machineBusy']:.0%} busy"
          f"  | sent {result['sent']}, answered once {result['turns']}, lost {result['lost']},"
          f" duplicated {result['duplicated']}, errors {result['errors']}  {verdict}")
    for problem in result["problems"]:
        print(f"      {problem}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=1, help="human messages per chat")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per model call")
    parser.add_argument("--processes", default="1,2,4", help="process / worker counts")
    parser.add_argument("--engines", default=",".join(ENGINES), help="inprocess,temporal")
    parser.add_argument("--senders", type=int, default=1, help="sender processes (Temporal)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="first messages per second over all chats (0: all at once)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per configuration")
    parser.add_argument("--start-timeout", type=float, default=120.0)
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    parser.add_argument("--post", action="store_true",
                        help="post each message and follow the event log instead of waiting in send")
    args = parser.parse_args()
    if args.post and args.messages != 1:
        parser.error("--post sends one message a chat")

    for name in TEMPORAL_VARIABLES:  # setup and the count are plain storage, here
        os.environ.pop(name, None)
    engines = [e for e in args.engines.split(",") if e]
    counts = [int(n) for n in args.processes.split(",") if n]
    if unknown := set(engines) - set(ENGINES):
        parser.error(f"unknown engines: {', '.join(sorted(unknown))}")
    print(f"Scale-out: {args.chats:,} chats x {args.messages} message(s), model {args.latency * 1000:g} ms"
          f" a call, PostgreSQL; load before: {load_average()}")
    results: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        model = stack.enter_context(OpenAIWireProcess(delay=args.latency))
        pg = stack.enter_context(postgres_cluster())
        temporal = None
        if "temporal" in engines:
            if (why := temporal_missing()) is not None:
                print(f"  temporal: skipped, {why}")
                engines.remove("temporal")
            else:
                from agentworld.testing.temporal import temporal_dev_server

                temporal = stack.enter_context(temporal_dev_server())
        for engine in engines:
            for n in counts:
                result = run_configuration(args, engine, n, pg, model, temporal)
                show(result)
                results.append(result)
    print(f"load after: {load_average()}")
    if args.json:
        print(json.dumps({"results": results}))
    failed = [r for r in results if not r["ok"]]
    if failed:
        print(f"FAILED: {len(failed)} configuration(s) lost, duplicated or errored answers",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
