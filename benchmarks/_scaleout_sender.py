"""A sender process of ``scaleout.py``: opens the world, says ``ready``, waits for ``go`` on
stdin, sends its share of the chats, and prints what it saw as one JSON line.

Two ways to send, the same on either engine. ``send`` (the default): ``AgentWorld.send`` per
message, which returns when the message is handled — chats at once, a chat's messages one
after the other. ``--post``: ``AgentWorld.post`` per chat (it returns once the message is
stored), then one reader follows the world's event log, as a web client's feed does, until
every message has its answer; what a waiting ``send`` costs its caller is then left out.

    python benchmarks/_scaleout_sender.py --db URL --share FILE [--messages M] [--rate R] [--post]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from agentworld import AgentWorld
from agentworld.storage.event_log import EventLog

WORLD = "scaleout"
AGENT = "a1"
FOLLOW_SECONDS = 0.1
"""How often ``--post`` reads the event log when it found nothing new."""


async def send_chats(args: argparse.Namespace, share: list[list[Any]]) -> dict[str, Any]:
    """Send ``share`` (each ``[position, chat]``: the position times the first message under
    ``--rate``) and report the latencies seen, the problems met and this process's CPU."""
    latencies: list[float] = []
    problems: list[str] = []
    async with AgentWorld(args.db) as aw:
        if args.warm_runtime:
            await aw.runtime(WORLD)  # the in-process engine runs chats here: start it now
        else:
            await aw.list_agents(WORLD)  # the database's connection and statements warm
        log = EventLog(aw.storage)
        after = await log.head(WORLD)
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        started, cpu = time.perf_counter(), time.process_time()
        posted: dict[str, float] = {}

        async def at_its_time(position: int) -> None:
            if args.rate:
                await asyncio.sleep(max(0.0, started + position / args.rate - time.perf_counter()))

        async def send_into(position: int, chat: str) -> None:
            await at_its_time(position)
            for n in range(args.messages):
                sent = time.perf_counter()
                try:
                    result = await aw.send(WORLD, f"@{AGENT} message {n + 1}", chat_id=chat)
                except Exception as exc:  # counted and shown: the run fails on it
                    problems.append(f"{chat}: {exc!r}"[:300])
                    return
                latencies.append(time.perf_counter() - sent)
                problems.extend(f"{chat}: {e}"[:300] for e in result.errors)
                if result.timed_out:
                    problems.append(f"{chat}: send timed out")

        async def post_into(position: int, chat: str) -> None:
            await at_its_time(position)
            sent = time.perf_counter()
            try:
                message = await aw.post(WORLD, f"@{AGENT} message 1", chat_id=chat)
            except Exception as exc:  # counted and shown: the run fails on it
                problems.append(f"{chat}: {exc!r}"[:300])
                return
            posted[message.message_id] = sent

        async def follow() -> None:
            """Read the log until every message of the share has an answer of ``a1``."""
            nonlocal after
            answered: dict[str, float] = {}
            mine = {chat for _position, chat in share}  # other senders post into the same world
            while len(answered) < len(share) - len(problems):
                batch = await log.after(WORLD, after, limit=1000)
                after = batch.last_seq
                now = time.perf_counter()
                for event in batch.events:
                    said = event.document.get("message") if event.kind == "message" else None
                    if isinstance(said, dict) and said.get("sender") == AGENT and event.chat_id in mine:
                        answered.setdefault(str(said.get("replyToMessageId")), now)
                if not batch.full:
                    await asyncio.sleep(FOLLOW_SECONDS)
            latencies.extend(answered[m] - posted[m] for m in answered if m in posted)

        if args.post:
            await asyncio.gather(follow(), *(post_into(p, chat) for p, chat in share))
        else:
            await asyncio.gather(*(send_into(p, chat) for p, chat in share))
        cpu = time.process_time() - cpu
    return {"latencies": latencies, "problems": problems, "cpu": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--share", required=True, help="JSON file: [[position, chat], ...]")
    parser.add_argument("--messages", type=int, default=1)
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--post", action="store_true")
    parser.add_argument("--warm-runtime", action="store_true")
    args = parser.parse_args()
    share = json.loads(Path(args.share).read_text())
    print(json.dumps(asyncio.run(send_chats(args, share))), flush=True)


if __name__ == "__main__":
    main()
