"""A throwaway PostgreSQL cluster on loopback, for tests (the server binaries come from
Debian's ``postgresql`` package, installed by ``scripts/test``).

``initdb`` refuses to run as root, so as root the cluster belongs to the ``postgres`` user
the Debian package creates. The cluster trusts loopback connections, listens on a free port
of 127.0.0.1 only, and is stopped and deleted when the context ends. A test may stop and start
it meanwhile (``PostgresCluster.stop`` / ``start``) to see what an outage does.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine (``scripts/test`` installs them)."""


def _binary(name: str) -> str:
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None
    )
    if found is None:
        raise PostgresUnavailable(
            f"{name} not found: install Debian's postgresql package (scripts/test does)"
        )
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresCluster:
    """A cluster made by ``restartable_cluster``: its ``url``, and ``stop`` / ``start`` for
    tests of what a database outage does to the clients of this one server only."""

    def __init__(self, root: Path, port: int, as_user: list[str]) -> None:
        self.root = root
        self.port = port
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        self._as_user = as_user
        self._pg_ctl = _binary("pg_ctl")

    def start(self) -> None:
        """Start the server and wait until it takes connections."""
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off"
        self._run(self._pg_ctl, "-D", str(self.root / "data"), "-o", options, "-w",
                  "-l", str(self.root / "log"), "start")

    def stop(self) -> None:
        """Stop the server at once, cutting every connection (as a crash would)."""
        self._run(self._pg_ctl, "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")

    def _run(self, *argv: str) -> None:
        subprocess.run([*self._as_user, *argv], check=True, capture_output=True, timeout=120)


@contextmanager
def restartable_cluster() -> Iterator[PostgresCluster]:
    """Make and start a cluster; stop and delete it when the context ends."""
    root = Path(tempfile.mkdtemp(prefix="agentworld-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres")
    cluster = PostgresCluster(root, _free_port(), as_user)
    try:
        cluster._run(_binary("initdb"), "-D", str(root / "data"), "-U", "postgres",
                     "--auth=trust", "-E", "UTF8")
        cluster.start()
        try:
            yield cluster
        finally:
            subprocess.run([*as_user, cluster._pg_ctl, "-D", str(root / "data"), "-m",
                            "immediate", "stop"], check=False, capture_output=True, timeout=60)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """Start a cluster and yield its ``postgresql://`` URL (database ``postgres``)."""
    with restartable_cluster() as cluster:
        yield cluster.url


def create_database(server_url: str, name: str, *, template: str | None = None) -> str:
    """Create database ``name`` on the cluster at ``server_url`` (a copy of ``template`` if
    given); return its URL (one fresh database per test keeps tests apart on one cluster)."""
    for word in (name, template or name):
        if not word.isidentifier():
            raise ValueError(f"not a plain database name: {word!r}")
    prefix, _, _ = server_url.rpartition("/")
    host_port = prefix.rsplit("@", 1)[-1]
    host, _, port = host_port.partition(":")
    statement = f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else "")
    subprocess.run(
        [_binary("psql"), "-h", host, "-p", port or "5432", "-U", "postgres", "-d", "postgres",
         "-v", "ON_ERROR_STOP=1", "-c", statement],
        check=True, capture_output=True, timeout=60,
    )
    return f"{prefix}/{name}"


_templates: dict[str, str] = {}
_templates_lock = threading.Lock()


def create_migrated_database(server_url: str, name: str) -> str:
    """``create_database`` with agentworld's schema already in it: a copy of a database this
    process migrated once (``CREATE DATABASE … TEMPLATE``), which costs a file copy instead of
    the migrations each time. What a test sees is what ``SQLStorage.open`` makes."""
    with _templates_lock:
        template = _templates.get(server_url)
        if template is None:
            template = f"agentworld_template_{os.getpid()}"
            _migrate(create_database(server_url, template))
            _templates[server_url] = template
    return create_database(server_url, name, template=template)


def _migrate(url: str) -> None:
    """Open the database once with ``SQLStorage`` (which migrates it), on a thread of its own so
    a caller inside a running event loop can wait for it; no connection stays open, as a
    template database requires."""
    from agentworld.storage.sql import SQLStorage

    async def migrate() -> None:
        async with SQLStorage(url):
            pass

    failure: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(migrate())
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="migrate-template")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
