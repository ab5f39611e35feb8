"""Chats on Temporal: a real dev server (the session's ``temporal_address``), real
``agentworld worker`` subprocesses and commands run with ``AGENTWORLD_TEMPORAL`` set. Each test
has a task queue of its own, so tests sharing the dev server never take each other's work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import Reply, ToolCallSpec

ALLOW_TOUCH_AND_SLEEP = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["touch", "sleep"]
decision = "allow"
priority = 100
"""
"""A policy file under which the tests' shell commands run without asking."""


def runs_command(command: str) -> Callable[[dict[str, Any]], Reply]:
    """A model that calls ``shell_cmd`` with ``command`` and answers ``result: <the result>``."""

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text("result: " + last["content"])
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": command}), id="call_1"))

    return answer


class Workers:
    """``agentworld worker`` processes of one test, stopped (SIGTERM) at its end."""

    def __init__(self, db_url: str, env: dict[str, str]) -> None:
        self._db_url = db_url
        self._env = env
        self.running: list[subprocess.Popen[str]] = []
        self.logs: dict[int, list[str]] = {}

    def start(
        self, *queues: str, timeout: float = 60, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        """Start a worker serving the test's queue and ``queues``; ``env`` adds variables."""
        argv = [sys.executable, "-m", "agentworld", "--db", self._db_url, "worker"]
        for queue in queues:
            argv += ["--queue", queue]
        proc = subprocess.Popen(argv, env={**self._env, **(env or {})}, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.running.append(proc)
        lines: list[str] = []
        self.logs[proc.pid] = lines
        ready = threading.Event()

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append(line)
                if line.startswith("agentworld worker on"):
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not ready.wait(0.1):
            assert proc.poll() is None, f"the worker exited: {''.join(lines)}"
            assert time.monotonic() < deadline, "the worker did not start"
        return proc

    def stop(self, proc: subprocess.Popen[str]) -> int:
        proc.send_signal(signal.SIGTERM)
        return proc.wait(30)

    def kill(self, proc: subprocess.Popen[str]) -> None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def close(self) -> None:
        for proc in self.running:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for proc in self.running:
            if proc.stderr is not None:
                proc.stderr.close()


@pytest.fixture
def temporal_env(temporal_address: str, tmp_path: Path) -> dict[str, str]:
    """The environment of this test's processes: its Temporal service and task queue."""
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "AGENTWORLD_LLM_RETRIES": "1",
        "NO_COLOR": "1",
        "AGENTWORLD_TEMPORAL": temporal_address,
        "AGENTWORLD_TEMPORAL_TASK_QUEUE": f"agentworld-test-{uuid.uuid4().hex}",
    }
    for name in ("AGENTWORLD_DB", "OPENAI_API_KEY"):
        env.pop(name, None)
    return env


@pytest.fixture
def workers(db_url: str, temporal_env: dict[str, str]) -> Iterator[Workers]:
    running = Workers(db_url, temporal_env)
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def tcli(cli: Any, temporal_env: dict[str, str]) -> Callable[..., Any]:
    """The ``cli`` fixture with this test's Temporal settings."""

    def run(*args: str, env: dict[str, str] | None = None, **options: Any) -> Any:
        return cli(*args, env={**temporal_env, **(env or {})}, **options)

    return run


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def wait_for() -> Callable[..., None]:
    """``wait_for(condition, what, timeout=60)``: poll until true, else fail naming ``what``."""
    return _wait_for
