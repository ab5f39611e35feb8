"""Fixtures of the HTTP tests: the real server (``agentworld serve`` in a subprocess on a
loopback port, one per test module and backend: over a SQLite file, then over a PostgreSQL
database, and for ``both_engines`` modules over PostgreSQL with a Temporal worker of the
module's own, see ``tests/conftest.py``) and a loopback OpenAI wire server its agents talk to;
helpers are in ``http_harness.py``."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from http_harness import LLMScript, Served, start_server

from agentworld.testing.openai_wire import OpenAIWireServer
from agentworld.testing.postgres import create_migrated_database


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("served")


@pytest.fixture(scope="module")
def served_backend(request: pytest.FixtureRequest) -> str:
    """The backend of the module's server (parametrized by ``tests/conftest.py``)."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture(scope="module")
def served(
    request: pytest.FixtureRequest, module_dir: Path, served_backend: str
) -> Iterator[Served]:
    """One server for a test module; each test uses worlds of its own."""
    home = module_dir / served_backend
    home.mkdir(exist_ok=True)
    if served_backend == "sqlite":
        url = f"sqlite:///{home / 'agentworld.db'}"
    else:
        server = request.getfixturevalue("postgres_server")
        url = create_migrated_database(server, f"served{os.getpid()}_{next(_servers)}")
    if served_backend != "temporal":
        running = start_server(url, home)
        yield running
        running.stop()
        return
    # The module's other processes (a CLI command, a second server) are on Temporal too.
    with request.getfixturevalue("temporal_engine")(request, url, home) as settings, pytest.MonkeyPatch.context() as patch:
        for name, value in settings.items():
            patch.setenv(name, value)
        running = start_server(url, home)
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
_servers = itertools.count()


@pytest.fixture
def world_name() -> str:
    return f"w{os.getpid()}x{next(_worlds)}"
