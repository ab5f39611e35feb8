"""Shared fixtures: a real SQLite file per test and a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'agentworld.db'}"


@pytest.fixture
def openai_server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as server:
        yield server


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def cli(db_url: str, tmp_path: Path) -> Any:
    """Run ``agentworld --db <this test's db> ARGS`` in a subprocess, as a user would."""
    env = {
        **os.environ,
        "HOME": str(tmp_path),  # never touch the real ~/.agentworld
        "AGENTWORLD_LLM_RETRIES": "1",
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    env.pop("AGENTWORLD_DB", None)
    env.pop("OPENAI_API_KEY", None)

    def run(*args: str, check: bool = True, timeout: float = 60, db: str | None = None) -> CliResult:
        proc = subprocess.run(
            [sys.executable, "-m", "agentworld", "--db", db or db_url, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        result = CliResult(proc.returncode, proc.stdout, proc.stderr)
        if check and proc.returncode != 0:
            raise AssertionError(f"agentworld {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
        return result

    return run
