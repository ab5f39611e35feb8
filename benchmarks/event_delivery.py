"""Event delivery over the HTTP event stream: 100 SSE clients of one world during a streamed
conversation (issue 15).

``agentworld serve`` runs in a subprocess on a loopback port; its agents ``a1`` and ``a2`` talk
to the loopback OpenAI wire server of this process, which streams every answer
(``--chars`` characters, 4 a chunk, ``--chunk-delay`` apart: a fast model) and hands the word
to the other agent until ``--turns`` answers are given. ``--clients`` SSE clients, spread over
``--client-processes`` processes (plain asyncio sockets, so the clients cost little CPU), follow
the world from the position before the conversation starts. Three runs per backend:

* **served, 1 client** — the message is posted over HTTP and the server runs the conversation:
  the floor of one client;
* **served, N clients** — the same with ``--clients`` followers: the fan-out;
* **another process, N clients** — an ``AgentWorld`` in another process runs the conversation
  on the same database (as ``agentworld send`` would): its stored events reach the server
  through the log (SQLite: the 150 ms poll; PostgreSQL: LISTEN/NOTIFY). Token chunks are live
  only, so none reach the server from another process.

Reported per run: events delivered per second (every frame every client got, over the time
from the post to the last client done), and the latency from an event's ``createdAt`` (taken
when the event or message is made, just before it is stored; a token chunk's when it is
published) to the client reading it, median and p99, for stored events and token chunks apart;
the server's CPU time per delivered frame; and a check: every client got the same stored events
as a replay of the log (``?after=``), each once, in order, and the whole answer's chunks.

    python benchmarks/event_delivery.py                  # SQLite, then PostgreSQL (a throw-away cluster)
    python benchmarks/event_delivery.py --backend sqlite --clients 20 --turns 4 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
from _harness import header, percentile, ratio
from _serve import BACKEND_CHOICES, Backend, database, each_backend, load_average, served

from agentworld import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer, Reply

WORLD = "bench"
END = "[end of conversation]"


# -- the model: a streamed conversation of a fixed length ------------------------------------


class Conversation:
    """Answers every agent request with ``chars`` characters streamed in 4-character chunks,
    mentioning the other agent, until ``turns`` answers have been given; the last one carries
    ``END`` and mentions nobody, so the chat goes idle."""

    def __init__(self, *, turns: int, chars: int, chunk_delay: float) -> None:
        self.turns = turns
        self.chars = chars
        self.chunk_delay = chunk_delay
        self._given = 0
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self._given = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        first = body["messages"][0]
        if first.get("role") != "system" or not str(first.get("content")).startswith("agent:"):
            return Reply.text("A title")  # the chat's title request (SPEC O5)
        agent = str(first["content"]).removeprefix("agent:")
        with self._lock:
            self._given += 1
            n = self._given
        other = "a2" if agent == "a1" else "a1"
        # The last answer ends the conversation with a world tag (SPEC R6); without it the
        # reply would be auto-mentioned back to the agent that spoke last, and go on.
        lead = f"{END} <world>DONE</world>" if n >= self.turns else f"@{other} turn {n}:"
        filler = ("lorem ipsum dolor sit amet " * (self.chars // 27 + 1))[: max(0, self.chars - len(lead) - 1)]
        return Reply.text(f"{lead} {filler}", chunk_size=4, chunk_delay=self.chunk_delay)


# -- the clients (run in worker processes) ---------------------------------------------------


@dataclass
class ClientLog:
    """What one client received: stored ids in order, and latencies in ms."""

    ids: list[int] = field(default_factory=list)
    stored_ms: list[float] = field(default_factory=list)
    chunk_ms: list[float] = field(default_factory=list)
    chunk_text: list[str] = field(default_factory=list)
    frames: int = 0
    first_received: float = 0.0
    last_received: float = 0.0


async def _follow(url: str, log: ClientLog, ready: asyncio.Event) -> None:
    """One SSE client on a raw socket: HTTP/1.1 GET, chunked body, SSE lines; stops at ``END``."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    target = f"{parts.path}?{parts.query}" if parts.query else parts.path
    writer.write(
        f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    await writer.drain()
    status = await reader.readline()
    if b" 200 " not in status:
        raise RuntimeError(f"event stream answered {status!r}")
    chunked = False
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
            chunked = True

    async def pieces() -> Any:
        while True:
            if not chunked:
                data = await reader.read(65536)
                if not data:
                    return
                yield data
                continue
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                return
            yield (await reader.readexactly(size + 2))[:-2]

    buffer = b""
    data: list[bytes] = []
    ident: bytes | None = None
    try:
        async for piece in pieces():
            buffer += piece
            *lines, buffer = buffer.split(b"\n")
            for raw in lines:
                line = raw.rstrip(b"\r")
                if line.startswith(b":"):
                    ready.set()  # the stream's opening comment: following from here
                elif line.startswith(b"data:"):
                    data.append(line[5:].lstrip(b" "))
                elif line.startswith(b"id:"):
                    ident = line[3:].strip()
                elif not line and data:
                    received = time.time()
                    document = json.loads(b"\n".join(data))
                    created = datetime.fromisoformat(document["createdAt"]).timestamp()
                    latency = (received - created) * 1000.0
                    log.frames += 1
                    log.first_received = log.first_received or received
                    log.last_received = received
                    if ident:
                        log.ids.append(int(ident))
                        log.stored_ms.append(latency)
                    else:
                        log.chunk_ms.append(latency)
                        log.chunk_text.append(document.get("content") or "")
                    data, ident = [], None
                    message = document.get("message") or {}
                    if END in (message.get("content") or ""):
                        return
    finally:
        writer.close()


async def _clients(url: str, count: int) -> list[ClientLog]:
    logs = [ClientLog() for _ in range(count)]
    ready = [asyncio.Event() for _ in range(count)]
    tasks = [asyncio.create_task(_follow(url, log, r)) for log, r in zip(logs, ready, strict=True)]
    await asyncio.gather(*(r.wait() for r in ready))
    print("ready", flush=True)
    await asyncio.gather(*tasks)
    return logs


def client_worker(url: str, count: int) -> None:
    logs = asyncio.run(_clients(url, count))
    print(json.dumps([log.__dict__ for log in logs]), flush=True)


# -- the other process that runs the conversation ----------------------------------------------


async def _send_from_another_process(db: str, chat: str) -> None:
    async with AgentWorld(db) as aw:
        runtime = await aw.runtime(WORLD)
        await runtime.send(chat, "@a1 go")
        await runtime.wait_until_idle(chat)


# -- one run -----------------------------------------------------------------------------------


def run_once(
    *, api: httpx.Client, base_url: str, db: str, conversation: Conversation,
    clients: int, processes: int, from_other_process: bool, server_cpu: Any,
) -> dict[str, Any]:  # fmt: skip
    conversation.reset()
    chat = api.post(f"/api/worlds/{WORLD}/chats").json()["chatId"]
    start = api.get(f"/api/worlds/{WORLD}/chats/{chat}/messages").json()["lastEventId"]
    url = f"{base_url}/api/worlds/{WORLD}/events?chat={chat}&after={start}"
    per = [clients // processes + (1 if i < clients % processes else 0) for i in range(processes)]
    workers = [
        subprocess.Popen(
            [sys.executable, __file__, "--client-worker", str(n), "--url", url],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        for n in per
        if n
    ]
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    cpu_before = server_cpu()
    posted = time.time()
    if from_other_process:
        sender = subprocess.run(
            [sys.executable, __file__, "--send", db, "--chat", chat],
            env={**os.environ, "AGENTWORLD_LLM_RETRIES": "1"}, check=True,
        )  # fmt: skip
        assert sender.returncode == 0
    else:
        response = api.post(f"/api/worlds/{WORLD}/chats/{chat}/messages", json={"text": "@a1 go"})
        assert response.status_code == 202, response.text
    logs: list[dict[str, Any]] = []
    for worker in workers:
        out, _ = worker.communicate(timeout=600)
        logs.extend(json.loads(out.strip().splitlines()[-1]))
    cpu = server_cpu() - cpu_before
    _wait_idle(api, chat)
    replay = _replay(base_url, chat, start)
    return summarize(logs, replay, posted, cpu, conversation)


def _wait_idle(api: httpx.Client, chat: str) -> None:
    """The chat's work is done (its title, too) before the next run starts."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        chats = api.get(f"/api/worlds/{WORLD}/status").json()["chats"]
        if all(c["state"] == "idle" for c in chats if c["chatId"] == chat):
            return
        time.sleep(0.05)
    raise RuntimeError(f"chat {chat} did not go idle")


def _replay(base_url: str, chat: str, start: int) -> list[int]:
    """The stored events after ``start`` as a client that connects afterwards gets them."""
    log = ClientLog()
    asyncio.run(_follow(f"{base_url}/api/worlds/{WORLD}/events?chat={chat}&after={start}", log, asyncio.Event()))
    return log.ids


def summarize(
    logs: list[dict[str, Any]], replay: list[int], posted: float, cpu: float, conversation: Conversation
) -> dict[str, Any]:
    stored = [ms for log in logs for ms in log["stored_ms"]]
    chunks = [ms for log in logs for ms in log["chunk_ms"]]
    frames = sum(log["frames"] for log in logs)
    # From the first frame any client got to the last: the conversation as delivered (the
    # other process's start-up is not in it).
    wall = max(log["last_received"] for log in logs) - min(log["first_received"] for log in logs)
    texts = {"".join(log["chunk_text"]) for log in logs}
    return {
        "clients": len(logs),
        "frames_per_client": round(frames / len(logs), 1),
        "stored_per_client": len(replay),
        "wall_s": round(wall, 3),
        "events_per_s": round(frames / wall, 1),
        "stored_median_ms": round(percentile(stored, 0.5), 2),
        "stored_p99_ms": round(percentile(stored, 0.99), 2),
        "chunk_median_ms": round(percentile(chunks, 0.5), 2) if chunks else None,
        "chunk_p99_ms": round(percentile(chunks, 0.99), 2) if chunks else None,
        "server_cpu_s": round(cpu, 2),
        "server_cpu_us_per_frame": round(cpu / frames * 1e6, 1) if frames else None,
        "every_client_got_the_log": all(log["ids"] == replay for log in logs),
        "in_order_once": all(log["ids"] == sorted(set(log["ids"])) for log in logs),
        "same_chunks_everywhere": len(texts) == 1,
        "answers": conversation.turns,
    }


def run_backend(backend: Backend, args: argparse.Namespace) -> dict[str, Any]:
    conversation = Conversation(turns=args.turns, chars=args.chars, chunk_delay=args.chunk_delay)
    results: dict[str, Any] = {"backend": backend, "load_before": load_average(), "runs": {}}
    with (
        database(backend, postgres_url=args.postgres_url) as db,
        OpenAIWireServer(responder=conversation) as llm,
        served(db) as server,
        httpx.Client(base_url=server.base_url, timeout=60) as api,
    ):
        api.post("/api/worlds", json={"name": WORLD, "streaming": True, "turnLimit": 10_000}).raise_for_status()
        for agent in ("a1", "a2"):
            api.post(f"/api/worlds/{WORLD}/agents", json={
                "name": agent, "provider": "openai", "model": "m", "baseUrl": llm.base_url,
                "systemPrompt": f"agent:{agent}",
            }).raise_for_status()  # fmt: skip
        runs = [
            ("warm-up (not reported)", 1, False),
            ("served, 1 client", 1, False),
            (f"served, {args.clients} clients", args.clients, False),
            (f"another process, {args.clients} clients", args.clients, True),
        ]
        for name, clients, other in runs:
            results["runs"][name] = run_once(
                api=api, base_url=server.base_url, db=db, conversation=conversation,
                clients=clients, processes=min(args.client_processes, clients),
                from_other_process=other, server_cpu=server.cpu_seconds,
            )  # fmt: skip
        del results["runs"]["warm-up (not reported)"]
    results["load_after"] = load_average()
    return results


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    header(
        "Event delivery: SSE clients of one world during a streamed conversation",
        answers=f"{args.turns} of {args.chars} characters, 4 a chunk, {args.chunk_delay * 1000:g} ms apart",
        client_processes=args.client_processes,
        load_average=load_average(),
    )
    for result in results:
        print(f"{result['backend']} (load average before {result['load_before']}, after {result['load_after']})")
        runs = result["runs"]
        one = runs["served, 1 client"]
        for name, run in runs.items():
            checks = run["every_client_got_the_log"] and run["in_order_once"] and run["same_chunks_everywhere"]
            chunk = (
                f"chunks median {run['chunk_median_ms']:7.2f} ms  p99 {run['chunk_p99_ms']:8.2f} ms"
                if run["chunk_median_ms"] is not None else "no chunks (live only, other process)"
            )  # fmt: skip
            print(f"  {name}")
            print(
                f"    {run['events_per_s']:9,.0f} events/s delivered  ({run['frames_per_client']:.0f} a client,"
                f" {run['stored_per_client']} stored, {run['wall_s']:.2f} s)"
            )
            print(f"    stored median {run['stored_median_ms']:7.2f} ms  p99 {run['stored_p99_ms']:8.2f} ms   {chunk}")
            print(
                f"    server CPU {run['server_cpu_s']:.2f} s, {run['server_cpu_us_per_frame']} µs a frame;"
                f" every client got the log once, in order{'' if checks else ': NO'}"
            )
        many = runs[f"served, {args.clients} clients"]
        other = runs[f"another process, {args.clients} clients"]
        print(
            f"  ratios: stored median {args.clients} clients / 1 client"
            f" {ratio(many['stored_median_ms'], one['stored_median_ms']):.2f},"
            f" chunk median {ratio(many['chunk_median_ms'] or 0, one['chunk_median_ms'] or 0):.2f};"
            f" another process / served (stored median)"
            f" {ratio(other['stored_median_ms'], many['stored_median_ms']):.2f}"
        )
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--turns", type=int, default=10, help="answers in each conversation")
    parser.add_argument("--chars", type=int, default=400, help="characters in each answer")
    parser.add_argument("--chunk-delay", type=float, default=0.005, help="seconds between chunks")
    parser.add_argument("--backend", choices=sorted(BACKEND_CHOICES), default="both")
    parser.add_argument("--postgres-url", help="a PostgreSQL server to use (default: a throw-away cluster)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--client-worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--send", help=argparse.SUPPRESS)
    parser.add_argument("--chat", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.client_worker is not None:
        client_worker(args.url, args.client_worker)
        return
    if args.send is not None:
        asyncio.run(_send_from_another_process(args.send, args.chat))
        return

    results = each_backend(args.backend, lambda backend: run_backend(backend, args))
    if args.json:
        print(json.dumps({"load_average": load_average(), "results": results}, indent=2))
    else:
        report(results, args)


if __name__ == "__main__":
    main()
