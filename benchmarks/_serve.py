"""What the HTTP benchmarks share: a database of either backend, and ``agentworld serve`` on it
in a subprocess on a loopback port, as people run it.

PostgreSQL is a throw-away cluster on loopback (``agentworld.testing.postgres``, the server
binaries of Debian's ``postgresql`` package), or the server ``--postgres-url`` names.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx

from agentworld.testing.postgres import PostgresUnavailable, create_database, postgres_cluster
from agentworld.testing.processes import stop_process

Backend = Literal["sqlite", "postgresql"]
_numbers = itertools.count()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: other sessions share this machine's cores."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


@contextlib.contextmanager
def database(backend: Backend, *, postgres_url: str | None = None) -> Iterator[str]:
    """A fresh, empty database of ``backend``; its URL. Raises ``PostgresUnavailable`` when
    PostgreSQL is asked for and neither a URL nor the server binaries are there."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="agentworld-bench-") as tmp:
            yield f"sqlite:///{tmp}/bench.db"
        return
    with contextlib.ExitStack() as stack:
        server = postgres_url or stack.enter_context(postgres_cluster())
        yield create_database(server, f"bench{os.getpid()}_{next(_numbers)}")


BACKEND_CHOICES: dict[str, list[Backend]] = {
    "sqlite": ["sqlite"],
    "postgresql": ["postgresql"],
    "both": ["sqlite", "postgresql"],
}
"""``--backend`` values and the backends each runs."""


@dataclass(frozen=True)
class Served:
    """A running ``agentworld serve``."""

    base_url: str
    pid: int

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far (Linux ``/proc``)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def served(db_url: str) -> Iterator[Served]:
    """``agentworld --db URL serve`` on a free loopback port until the block ends."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="agentworld-serve-") as home:
        env = {**os.environ, "HOME": home, "AGENTWORLD_LLM_RETRIES": "1", "NO_COLOR": "1"}
        for name in ("AGENTWORLD_DB", "AGENTWORLD_TOKEN"):
            env.pop(name, None)
        log = Path(home) / "serve.log"
        with log.open("w") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "agentworld", "--db", db_url, "serve", "--port", str(port)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        base_url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"agentworld serve did not start: {log.read_text()}")
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{base_url}/health", timeout=1).status_code == 200:
                        break
                time.sleep(0.05)
            yield Served(base_url, process.pid)
        finally:
            stop_process(process)


def each_backend(choice: str, run: Callable[[Backend], dict[str, Any]]) -> list[dict[str, Any]]:
    """``run`` on each backend of ``--backend CHOICE``; a PostgreSQL that cannot be had is said
    and skipped (the SQLite figures still come)."""
    results = []
    for backend in BACKEND_CHOICES[choice]:
        try:
            results.append(run(backend))
        except PostgresUnavailable as exc:
            print(f"skipping {backend}: {exc}")
    return results


__all__ = [
    "BACKEND_CHOICES",
    "Backend",
    "PostgresUnavailable",
    "Served",
    "database",
    "each_backend",
    "load_average",
    "served",
]
