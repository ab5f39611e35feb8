"""On PostgreSQL the event stream of a ``serve`` process shows the token chunks of a turn that
another process runs — an ``agentworld send`` on the in-process engine, an ``agentworld
worker`` on Temporal — as they stream, once each, after the answer's ``start`` and before its
stored message.

Real processes throughout: ``agentworld serve``, ``send`` and ``worker`` on one PostgreSQL
database, a Temporal dev server (``temporal_address``), and the loopback OpenAI wire server
pacing its chunks (``chunk_delay``).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_harness import (
    Frame,
    LLMScript,
    SSEClient,
    is_message,
    make_world,
    server_env,
    start_server,
)

from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from agentworld.testing.postgres import create_migrated_database

_numbers = itertools.count()


@pytest.fixture
def pg_url(postgres_server: str) -> str:
    """A database of this test's own on the session's PostgreSQL server."""
    return create_migrated_database(postgres_server, f"live{os.getpid()}_{next(_numbers)}")


ANSWER = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
PACE = 0.05
"""Seconds between the model's chunks (4 characters each): the answer takes about a second."""


def _chunks(frames: list[Frame]) -> list[Frame]:
    return [f for f in frames if f.event == "sse" and f.data.get("phase") == "chunk"]


def _follow_a_turn_run_elsewhere(
    db_url: str, home: Path, llm: OpenAIWireServer, script: LLMScript, env: dict[str, str]
) -> None:
    """Serve ``db_url``; send a message from another process; the stream shows the answer's
    chunks as they come, then its stored message."""
    served = start_server(db_url, home, env=env)
    try:
        with served.client() as api:
            chat = make_world(api, "w", llm, "a1", streaming=True)
        script.by_agent["w/a1"] = lambda _body: Reply.text(ANSWER, chunk_delay=PACE)
        with SSEClient(f"{served.base_url}/api/worlds/w/events?chat={chat}") as stream:
            time.sleep(0.5)  # the server's feed listens once the stream is open
            sending = subprocess.Popen(
                [sys.executable, "-m", "agentworld", "--db", db_url, "send", "w", "@a1 go",
                 "--json"],
                env={**server_env(home), **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            try:
                stream.wait_for(lambda f: f.event == "sse" and f.data.get("phase") == "chunk", timeout=60)
                first_chunk = time.monotonic()
                stream.wait_for(is_message("a1", ANSWER), timeout=60)
                stored = time.monotonic()
            finally:
                out, err = sending.communicate(timeout=60)
        assert sending.returncode == 0, err
    finally:
        served.stop()

    frames = stream.frames
    chunks = _chunks(frames)
    assert "".join(f.data["content"] for f in chunks) == ANSWER  # each once, in order
    assert all(f.id is None for f in chunks)
    assert stored - first_chunk > 0.4  # they came while the model spoke, not all at the end
    phases = [(f.event, f.data.get("phase")) for f in frames]
    start, end = phases.index(("sse", "start")), phases.index(("sse", "end"))
    message = next(i for i, f in enumerate(frames) if is_message("a1", ANSWER)(f))
    chunk_at = [i for i, f in enumerate(frames) if f in chunks]
    assert start < chunk_at[0] and chunk_at[-1] < min(end, message)


def test_the_stream_shows_the_chunks_of_a_turn_a_send_in_another_process_runs(
    pg_url: str, tmp_path: Path, llm: OpenAIWireServer, script: LLMScript
) -> None:
    _follow_a_turn_run_elsewhere(pg_url, tmp_path, llm, script, {})


@pytest.fixture
def worker(pg_url: str, tmp_path: Path, temporal_address: str) -> Iterator[dict[str, str]]:
    """An ``agentworld worker`` on a task queue of this test's; yields the environment that
    sends work to it."""
    env = {"AGENTWORLD_TEMPORAL": temporal_address,
           "AGENTWORLD_TEMPORAL_TASK_QUEUE": f"agentworld-test-{uuid.uuid4().hex}"}
    log = tmp_path / "worker.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "agentworld", "--db", pg_url, "worker"],
            env={**server_env(tmp_path), **env}, stdout=subprocess.DEVNULL, stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 60
        while "agentworld worker on" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.05)
        yield env
    finally:
        process.terminate()
        process.wait(30)


def test_the_stream_shows_the_chunks_of_a_turn_a_temporal_worker_runs(
    pg_url: str, tmp_path: Path, llm: OpenAIWireServer, script: LLMScript, worker: dict[str, str]
) -> None:
    _follow_a_turn_run_elsewhere(pg_url, tmp_path, llm, script, worker)
