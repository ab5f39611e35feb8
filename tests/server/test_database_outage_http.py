"""A PostgreSQL restart in the middle of traffic: while the database is down every request is
answered 503 with ``Retry-After`` and the API's error body (never a 500, never a traceback);
once it is back, requests work again without restarting the server, and a live event stream
that stayed open delivers every event stored afterwards by another process, once each, in
order.

Real parts: a PostgreSQL cluster of this test's own (stopped and started with ``pg_ctl``; the
session's shared server is never touched), ``agentworld serve`` in a subprocess, the CLI's
``send`` in another process with an offline scripted agent, and an SSE client on a thread.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from http_harness import Frame, Served, SSEClient, refusal, server_env, start_server

from agentworld.testing.postgres import PostgresCluster, restartable_cluster


@pytest.fixture
def cluster() -> Iterator[PostgresCluster]:
    with restartable_cluster() as made:
        yield made


@pytest.fixture
def served_on_pg(
    cluster: PostgresCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Served]:
    """``agentworld serve`` on the cluster, logging warnings to its log file."""
    monkeypatch.setenv("AGENTWORLD_LOG", "warning")
    running = start_server(cluster.url, tmp_path)
    yield running
    running.stop()


def send(served: Served, world: str, text: str) -> subprocess.CompletedProcess[str]:
    """``agentworld send`` in a process of its own, writing to the server's database."""
    return subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", served.db_url, "send", world, text,
         "--json"],
        env=server_env(served.home), capture_output=True, text=True, timeout=120,
    )


def stored_seqs(api: httpx.Client, world: str, after: int) -> list[int]:
    """The positions of every event stored after ``after``, read back through the log's own
    resumable stream (a new client resuming from ``after``)."""
    frames: list[Frame] = []
    with SSEClient(f"{api.base_url}/api/worlds/{world}/events?after={after}") as stream:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                frames.append(stream.wait_for(lambda f: f.id is not None, timeout=1))
            except AssertionError:
                break
    return [f.id for f in frames if f.id is not None]


def test_outage_answers_503_then_the_stream_delivers_every_later_event(
    cluster: PostgresCluster, served_on_pg: Served
) -> None:
    world = "outage"
    with served_on_pg.client() as api:
        assert api.post("/api/worlds", json={"name": world}).status_code == 201
        agent = {"name": "bot", "provider": "scripted", "model": "echo"}
        assert api.post(f"/api/worlds/{world}/agents", json=agent).status_code == 201
        before = send(served_on_pg, world, "@bot first")
        assert before.returncode == 0, before.stderr
        post = f"/api/worlds/{world}/chats/{json.loads(before.stdout)['chatId']}/messages"

        with SSEClient(f"{api.base_url}/api/worlds/{world}/events?after=0") as stream:
            stream.wait_for(lambda f: f.event == "message" and "echo: @bot first" in str(f.data))
            # The server runs the world too (its runtime is up when the database goes away).
            assert api.post(post, json={"text": "@bot from the server"}).status_code == 202
            stream.wait_for(lambda f: f.event == "message" and "echo: @bot from the server" in str(f.data))
            seen_before = max(f.id for f in stream.frames if f.id is not None)

            cluster.stop()
            try:
                for path in ("/api/worlds", f"/api/worlds/{world}/chats",
                             f"/api/worlds/{world}/approvals", f"/api/worlds/{world}/events"):
                    answer = api.get(path)
                    status, code, message = refusal(answer)
                    assert (status, code) == (503, "storage_error"), answer.text
                    assert int(answer.headers["Retry-After"]) >= 1
                    assert "Traceback" not in message and "127.0.0.1" in message
                for written in (api.post("/api/worlds", json={"name": "during"}),
                                api.post(post, json={"text": "@bot during"})):
                    assert refusal(written)[:2] == (503, "storage_error")
                time.sleep(3)  # the feed's reads fail meanwhile
            finally:
                cluster.start()

            # The first request after the restart works: dead pooled connections are replaced.
            assert api.get("/api/worlds").status_code == 200
            for n in range(3):
                after = send(served_on_pg, world, f"@bot after {n}")
                assert after.returncode == 0, after.stderr
            stream.wait_for(lambda f: f.event == "message" and "echo: @bot after 2" in str(f.data),
                            timeout=30)
            assert api.post(post, json={"text": "@bot server again"}).status_code == 202
            stream.wait_for(lambda f: f.event == "message" and "echo: @bot server again" in str(f.data),
                            timeout=30)
            time.sleep(1)  # anything sent twice would arrive by now
            while True:
                try:
                    stream.wait_for(lambda f: False, timeout=0.5)
                except AssertionError:
                    break
            live = [f.id for f in stream.frames if f.id is not None and f.id > seen_before]

        stored = stored_seqs(api, world, seen_before)
    assert stored, "nothing was stored after the outage"
    assert live == stored
    log = next(served_on_pg.home.glob("serve-*.log")).read_text()
    assert "Traceback" not in log, log
    assert "reads the log again" in log  # the feed's reads did fail, and recovered
