"""A database that cannot be reached ends in one clear line, never a hang or a traceback: a
PostgreSQL server that refuses, one that accepts and never answers (the connect timeout, 5 s
unless the URL says), and one that stops and starts again under a process that keeps its
storage open (the next unit after the restart works; the pool's dead connections are dropped).

Real parts: the CLI in subprocesses, a loopback TCP server that accepts and stays silent, and a
PostgreSQL cluster of this module's own, stopped and started with ``pg_ctl``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy.exc import DBAPIError

from agentworld.errors import StorageError
from agentworld.models import World
from agentworld.storage.faults import connect_options, unavailable
from agentworld.storage.sql import SQLStorage
from agentworld.testing.postgres import PostgresCluster, restartable_cluster
from agentworld.testing.silent import silent_server as listening_silently

pytestmark = pytest.mark.sqlite_only  # every test names its own database server with --db

@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """Only for the ``cli`` fixture, which needs one: every test here names its own ``--db``."""
    return f"sqlite:///{tmp_path / 'unused.db'}"


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server on loopback that accepts every connection and never sends a byte; its port."""
    with listening_silently() as port:
        yield port


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    with restartable_cluster() as made:
        yield made


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_a_server_that_never_answers_fails_within_the_connect_timeout(
    cli: Any, silent_server: int
) -> None:
    began = time.monotonic()
    result = cli("world", "list", db=f"postgresql://me:secret@127.0.0.1:{silent_server}/x",
                 check=False)
    took = time.monotonic() - began
    assert result.code == 1
    assert one_line(result.stderr) == (
        f"error: no answer from the database server at 127.0.0.1:{silent_server}/x within 5 s"
    )
    assert "secret" not in result.stderr and "me" not in result.stderr.split("at")[0]
    assert 4.5 < took < 20


def test_the_url_sets_its_own_connect_timeout(cli: Any, silent_server: int) -> None:
    began = time.monotonic()
    cli("world", "list")  # what the command costs without waiting for a server, on this machine
    started = time.monotonic() - began
    began = time.monotonic()
    result = cli("world", "list", check=False,
                 db=f"postgresql://me@127.0.0.1:{silent_server}/x?timeout=1")
    took = time.monotonic() - began
    assert one_line(result.stderr) == (
        f"error: no answer from the database server at 127.0.0.1:{silent_server}/x within 1 s"
    )
    assert took < started + 1 + 2.5  # well under the default 5 s wait


def test_a_timeout_that_is_no_number_of_seconds_is_refused(cli: Any) -> None:
    result = cli("world", "list", check=False, db="postgresql://me@127.0.0.1:1/x?timeout=soon")
    assert result.code == 1
    assert one_line(result.stderr) == "error: --db: timeout must be a number of seconds above 0"


def test_a_stopped_server_is_one_line_and_a_restarted_one_works_again(
    cli: Any, cluster: PostgresCluster
) -> None:
    cli("world", "create", "kept", db=cluster.url)
    cluster.stop()
    try:
        for args in (("world", "list"), ("messages", "kept"), ("send", "kept", "hello")):
            result = cli(*args, db=cluster.url, check=False)
            assert result.code == 1, args
            assert one_line(result.stderr) == (
                f"error: cannot reach the database server at 127.0.0.1:{cluster.port}/postgres: "
                "connection refused"
            )
    finally:
        cluster.start()
    assert "kept" in cli("world", "list", "--json", db=cluster.url).stdout


async def test_open_storage_outlives_a_restart(cluster: PostgresCluster) -> None:
    """A long-lived process (the server, ``talk``) keeps its storage open across a restart:
    units fail with a one-line ``StorageError`` while the server is down, and the first unit
    after it is back succeeds, on a fresh connection instead of a dead pooled one."""
    async with SQLStorage(cluster.url) as storage:
        await storage.list_worlds()
        cluster.stop()
        try:
            with pytest.raises(StorageError) as refused:
                await storage.list_worlds()
            assert str(refused.value).startswith(
                f"cannot reach the database server at 127.0.0.1:{cluster.port}/postgres"
            )
        finally:
            cluster.start()
        await storage.list_worlds()


async def test_units_after_an_unseen_restart_run_on_fresh_connections(
    cluster: PostgresCluster,
) -> None:
    """The server restarts between two units of a process (nothing ran meanwhile): the pool's
    connections are all dead, and the next units, reads and writes, still succeed, each once."""
    async with SQLStorage(cluster.url) as storage:
        await asyncio.gather(*(storage.list_worlds() for _ in range(5)))  # several pooled
        cluster.stop()
        cluster.start()
        worlds = await asyncio.gather(*(storage.list_worlds() for _ in range(5)))
        assert all(found == worlds[0] for found in worlds)
        await storage.create_world(World(name="after_restart"))
        names = [w.name for w in await storage.list_worlds()]
        assert names.count("after_restart") == 1


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (ConnectionRefusedError(111, "Connect call failed"),
         "cannot reach the database server at db:5433/app: connection refused"),
        (ConnectionResetError(104, "Connection reset by peer"),
         "lost the connection to the database server at db:5433/app: Connection reset by peer"),
        (TimeoutError(), "no answer from the database server at db:5433/app within 2 s"),
        (asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
         "database server at db:5433/app: the database system is starting up"),
        (asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed"),
         "lost the connection to the database server at db:5433/app: connection was closed"),
    ],
)
def test_each_driver_fault_is_one_line_naming_the_server(raised: Exception, said: str) -> None:
    url = "postgresql+asyncpg://me:secret@db:5433/app?timeout=2"
    wrapped = DBAPIError("SELECT 1", {}, raised)  # as SQLAlchemy hands it on
    for error in (raised, wrapped):
        found = unavailable(error, url)
        assert found is not None and str(found) == said
        assert "secret" not in str(found) and "me:" not in str(found)


def test_other_errors_are_not_an_unreachable_server() -> None:
    url = "postgresql+asyncpg://db/app"
    assert unavailable(ValueError("no"), url) is None
    assert unavailable(asyncpg.exceptions.UniqueViolationError("dup"), url) is None
    assert unavailable(ConnectionRefusedError(), "sqlite:///x.db") is None


def test_the_url_timeouts_reach_the_driver_and_leave_the_url() -> None:
    url, options = connect_options("postgresql+asyncpg://me:pw@db/app?ssl=require&timeout=9"
                                   "&command_timeout=30")
    assert url == "postgresql+asyncpg://me:pw@db/app?ssl=require"
    assert options == {"timeout": 9.0, "command_timeout": 30.0}
    assert connect_options("postgresql+asyncpg://db/app")[1] == {"timeout": 5.0}
