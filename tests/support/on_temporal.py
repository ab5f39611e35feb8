"""A pytest plugin that runs any test directory on the Temporal engine, to see what holds there:

    PYTHONPATH=tests/support python -m pytest tests/durability -p on_temporal

Every test that has a ``db_url`` gets ``AGENTWORLD_TEMPORAL`` (the session's dev server), a task
queue of its own and one ``agentworld worker`` on its database for its whole run. Tests about
what a killed ``send`` takes with it, refusals while another process runs a chat, and live
in-process events (token streaming, "is thinking") differ there by design (README, "Running on
Temporal")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _on_temporal(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    if "db_url" not in request.fixturenames:
        yield
        return
    url = request.getfixturevalue("db_url")
    monkeypatch.setenv("AGENTWORLD_TEMPORAL", request.getfixturevalue("temporal_address"))
    monkeypatch.setenv("AGENTWORLD_TEMPORAL_TASK_QUEUE", f"on-temporal-{uuid.uuid4().hex}")
    env = {**os.environ, "HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1"}
    log_path = tmp_path / "worker.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentworld", "--db", url, "worker"], env=env, stderr=log, stdout=log
        )
        deadline = time.monotonic() + 30
        while "agentworld worker on" not in log_path.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.1)
        try:
            yield
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
