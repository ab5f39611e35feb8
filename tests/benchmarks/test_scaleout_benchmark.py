"""The scale-out benchmark (``benchmarks/scaleout.py``) at a tiny size: every message it sends
is answered exactly once on each engine it runs, and its count of the database catches a lost
or a duplicated answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentworld.models import Chat, World
from agentworld.models.message import Message
from agentworld.storage.sql import SQLStorage

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPT = BENCHMARKS / "scaleout.py"


def scaleout_module() -> Any:
    """The script's own module (its helpers import from ``benchmarks/`` as siblings)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import scaleout

    return scaleout


def run_scaleout(*args: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--chats", "6", "--latency", "0.05", "--json", *args],
        capture_output=True, text=True, timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"results"')]
    return done, json.loads(lines[-1])["results"] if lines else []


@pytest.mark.parametrize("how", [(), ("--post",)], ids=["send", "post"])
def test_in_process_engine_answers_every_message_once_over_one_and_two_processes(
    how: tuple[str, ...],
) -> None:
    done, results = run_scaleout("--processes", "1,2", "--engines", "inprocess", *how)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(r["engine"], r["processes"]) for r in results] == [("inprocess", 1), ("inprocess", 2)]
    for result in results:
        assert (result["sent"], result["stored"], result["turns"]) == (6, 6, 6), result
        assert (result["lost"], result["duplicated"], result["errors"]) == (0, 0, 0), result
        assert result["ok"] and result["p50"] >= 0.05, result
    assert "lost 0, duplicated 0" in done.stdout


def test_temporal_engine_answers_every_message_once_over_one_and_two_workers() -> None:
    why = scaleout_module().temporal_missing()
    if why is not None:
        pytest.skip(f"no Temporal engine here: {why}")
    done, results = run_scaleout("--processes", "1,2", "--engines", "temporal")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(r["engine"], r["processes"]) for r in results] == [("temporal", 1), ("temporal", 2)]
    for result in results:
        assert (result["sent"], result["stored"], result["turns"]) == (6, 6, 6), result
        assert (result["lost"], result["duplicated"], result["errors"]) == (0, 0, 0), result
        assert result["ok"], result


async def test_the_count_finds_a_lost_and_a_duplicated_answer(tmp_path: Path) -> None:
    scaleout = scaleout_module()
    db = f"sqlite:///{tmp_path / 'counted.db'}"
    world, agent = scaleout.WORLD, scaleout.AGENT
    asked = {c: Message(chat_id=c, role="user", sender="human", content=f"@{agent} hi")
             for c in ("once", "twice", "never")}

    def answer(chat: str) -> Message:
        return Message(chat_id=chat, role="assistant", sender=agent, content="hello",
                       reply_to_message_id=asked[chat].message_id)

    async with SQLStorage(db) as storage:
        await storage.create_world(World(name=world))
        for chat, message in asked.items():
            await storage.create_chat(Chat(world=world, chat_id=chat))
            await storage.append_messages(world, [(None, message)])
        await storage.append_messages(
            world, [(None, answer("once")), (None, answer("twice")), (None, answer("twice"))]
        )

    counts = await scaleout.count_answers(db, list(asked), 1)
    assert (counts.sent, counts.stored, counts.answered_once) == (3, 3, 1)
    assert (counts.lost, counts.duplicated) == (1, 1)
    assert not counts.ok
    whole = await scaleout.count_answers(db, ["once"], 1)
    assert whole.ok and len(whole.latencies) == 1
