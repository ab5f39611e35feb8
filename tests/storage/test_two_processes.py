"""Two OS processes writing one SQLite file at once lose nothing and never see "database is locked".

This is the situation of a CLI command answering an approval while another
process runs the world: WAL mode, the busy timeout and ``BEGIN IMMEDIATE`` must
together make every write wait its turn instead of failing.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from agentworld.models import Agent, World
from agentworld.storage.sql import SQLStorage

MESSAGES_PER_PROCESS = 200
CALLS_PER_PROCESS = 100

WRITER = textwrap.dedent(
    """
    import asyncio, sys, time
    from pathlib import Path

    from agentworld.models import Message
    from agentworld.storage.sql import SQLStorage

    url, tag, ready, go = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
    MESSAGES, CALLS = int(sys.argv[5]), int(sys.argv[6])

    async def append_all(storage: SQLStorage) -> None:
        for i in range(MESSAGES):
            message = Message(chat_id="shared", role="user", sender=tag, content=f"{tag}-{i}")
            await storage.append_messages("lab", [(None, message)])  # one transaction each

    async def count_all(storage: SQLStorage) -> None:
        for _ in range(CALLS):
            await storage.add_llm_call("lab", "alice")

    async def main() -> None:
        async with SQLStorage(url) as storage:
            ready.touch()
            deadline = time.monotonic() + 30
            while not go.exists():  # start together with the other process
                if time.monotonic() > deadline:
                    sys.exit("never told to go")
                await asyncio.sleep(0.005)
            await asyncio.gather(append_all(storage), count_all(storage))

    asyncio.run(main())
    """
)


def start_writer(script: Path, db_url: str, tag: str, tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            str(script),
            db_url,
            tag,
            str(tmp_path / f"{tag}.ready"),
            str(tmp_path / "go"),
            str(MESSAGES_PER_PROCESS),
            str(CALLS_PER_PROCESS),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_two_processes_share_one_sqlite_file_without_losing_writes(
    db_url: str, tmp_path: Path
) -> None:
    async with SQLStorage(db_url) as storage:
        await storage.create_world(World(name="lab"))
        await storage.create_agent(Agent(world="lab", name="alice", provider="openai", model="m"))

    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    tags = ("proc-a", "proc-b")
    writers = [start_writer(script, db_url, tag, tmp_path) for tag in tags]
    try:
        deadline = time.monotonic() + 30
        while not all((tmp_path / f"{tag}.ready").exists() for tag in tags):
            for tag, writer in zip(tags, writers, strict=True):
                if writer.poll() is not None:
                    pytest.fail(f"{tag} exited before starting:\n{writer.communicate()[1]}")
            assert time.monotonic() < deadline, "writers did not get ready"
            await asyncio.sleep(0.01)
        (tmp_path / "go").touch()
        outputs = [await asyncio.to_thread(w.communicate, timeout=120) for w in writers]
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.communicate()

    for tag, writer, (_out, err) in zip(tags, writers, outputs, strict=True):
        assert writer.returncode == 0, f"{tag} failed:\n{err}"
        assert "locked" not in err

    async with SQLStorage(db_url) as storage:
        transcript = await storage.transcript("lab", "shared")
        agent = await storage.get_agent("lab", "alice")

    counts = Counter(m.content for m in transcript)
    expected = {f"{tag}-{i}" for tag in tags for i in range(MESSAGES_PER_PROCESS)}
    assert set(counts) == expected
    assert all(n == 1 for n in counts.values()), [c for c, n in counts.items() if n > 1]
    assert len({m.message_id for m in transcript}) == len(transcript)
    # Each process's own messages keep their order.
    for tag in tags:
        own = [m.content for m in transcript if m.sender == tag]
        assert own == [f"{tag}-{i}" for i in range(MESSAGES_PER_PROCESS)]
    assert agent.llm_call_count == len(tags) * CALLS_PER_PROCESS
