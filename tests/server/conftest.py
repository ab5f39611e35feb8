"""Fixtures of the HTTP tests: the real server (``agentworld serve`` in a subprocess on a
loopback port, over a SQLite file, one per test module) and a loopback OpenAI wire server its
agents talk to; helpers are in ``http_harness.py``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from http_harness import LLMScript, Served, start_server

from agentworld.testing.openai_wire import OpenAIWireServer


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("served")


@pytest.fixture(scope="module")
def served(module_dir: Path) -> Iterator[Served]:
    """One server for a test module; each test uses worlds of its own."""
    running = start_server(f"sqlite:///{module_dir / 'agentworld.db'}", module_dir)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def script() -> LLMScript:
    return LLMScript()


@pytest.fixture(scope="module")
def llm(script: LLMScript) -> Iterator[OpenAIWireServer]:
    """A loopback OpenAI-compatible server, answering as ``script`` says."""
    with OpenAIWireServer(responder=script) as server:
        yield server


@pytest.fixture
def api(served: Served) -> Iterator[httpx.Client]:
    with served.client() as client:
        yield client


_worlds = iter(range(1_000_000))


@pytest.fixture
def world_name() -> str:
    return f"w{os.getpid()}x{next(_worlds)}"
