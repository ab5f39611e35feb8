"""Deleting a world, or an agent, while another process answers in it is refused, and leaves
nothing behind once it is allowed (storage ``delete_world`` / ``delete_agent``,
``leases.chats_in_use``, ``inbox.take_agent_work``).

Before, ``world delete`` succeeded mid-turn and the other process went on writing the turn's
messages and events into the deleted world, where a world created later under the same name
found them; ``agent delete`` mid-turn let the answer land in the memory (and the usage) that
a new agent of the same name then started from. Real ``agentworld`` processes on one SQLite file, a model on the loopback OpenAI
wire server held until the test lets it answer, and a sender killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from agentworld.testing.openai_wire import OpenAIWireServer, Reply


def _world_with_held_model(cli: Any, server: OpenAIWireServer, script: Any) -> threading.Event:
    cli("world", "create", "w1", "--no-streaming")
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")  # fmt: skip
    release = threading.Event()

    def held(body: dict[str, Any]) -> Reply:
        release.wait(30)
        return Reply.text("answered")

    script.by_agent["a1"] = held
    return release


def _start_send(db_url: str, tmp_path: Path, server: OpenAIWireServer) -> subprocess.Popen[str]:
    env = {**os.environ, "HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", db_url, "send", "w1", "@a1 hello"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.requests, "the sender never asked the model"
    return proc


def _rows_of_world(db_url: str, world: str) -> dict[str, int]:
    """Rows naming ``world`` in every table that has a ``world`` column."""
    path = db_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        counts = {}
        for table in tables:
            columns = [c[1] for c in conn.execute(f'PRAGMA table_info("{table}")')]
            if "world" in columns:
                counts[table] = conn.execute(f'SELECT count(*) FROM "{table}" WHERE world = ?', (world,)).fetchone()[0]
            elif table == "worlds":
                counts[table] = conn.execute("SELECT count(*) FROM worlds WHERE name = ?", (world,)).fetchone()[0]
    return {table: n for table, n in counts.items() if n}


def test_a_world_another_process_answers_in_is_not_deleted_until_the_turn_ends(
    cli: Any, db_url: str, tmp_path: Path, script: Any, server: OpenAIWireServer
) -> None:
    release = _world_with_held_model(cli, server, script)
    proc = _start_send(db_url, tmp_path, server)
    try:
        refused = cli("world", "delete", "w1", check=False)
        assert refused.code == 1
        assert "in use" in refused.stderr and "Traceback" not in refused.stderr
        (chat,) = [c["chatId"] for c in cli("chat", "list", "w1", "--json").json()["chats"]]
        assert chat in refused.stderr  # names the chat being answered
    finally:
        release.set()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "answered" in out  # the turn the refusal protected finished

    cli("world", "delete", "w1")
    assert _rows_of_world(db_url, "w1") == {}
    cli("world", "create", "w1")
    assert cli("messages", "w1", "--json").json()["messages"] == []


def test_a_world_whose_answering_process_was_killed_is_deleted_at_once_and_wholly(
    cli: Any, db_url: str, tmp_path: Path, script: Any, server: OpenAIWireServer
) -> None:
    release = _world_with_held_model(cli, server, script)
    proc = _start_send(db_url, tmp_path, server)
    try:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
        cli("world", "delete", "w1")  # its claim on the chat names a process that is gone
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert _rows_of_world(db_url, "w1") == {}


def test_an_agent_answering_in_another_process_is_not_deleted_until_its_turn_ends(
    cli: Any, db_url: str, tmp_path: Path, script: Any, server: OpenAIWireServer
) -> None:
    release = _world_with_held_model(cli, server, script)
    proc = _start_send(db_url, tmp_path, server)
    try:
        refused = cli("agent", "delete", "w1", "a1", check=False)
        assert refused.code == 1
        assert "answering" in refused.stderr and "Traceback" not in refused.stderr
        assert cli("agent", "show", "w1", "a1", check=False).code == 0
    finally:
        release.set()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err

    cli("agent", "delete", "w1", "a1")
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")  # fmt: skip
    fresh = cli("agent", "show", "w1", "a1", "--json").json()
    assert fresh["llmCallCount"] == 0
    assert cli("messages", "w1", "--agent", "a1", "--json").json()["messages"] == []


def test_an_agent_whose_process_was_killed_mid_turn_is_deleted_with_its_unfinished_work(
    cli: Any, db_url: str, tmp_path: Path, script: Any, server: OpenAIWireServer
) -> None:
    """The killed process left the agent's loop queued; deleting the agent drops it, so
    ``resume`` does not continue it under a new agent of the same name."""
    release = _world_with_held_model(cli, server, script)
    proc = _start_send(db_url, tmp_path, server)
    try:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
        cli("agent", "delete", "w1", "a1")
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    asked = len(server.requests)
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")  # fmt: skip
    cli("resume", "w1")
    assert len(server.requests) == asked  # nothing of the old agent's turn was continued
    assert cli("messages", "w1", "--agent", "a1", "--json").json()["messages"] == []
