"""Child processes that tests and benchmarks start (loopback servers, ``agentworld serve``):
one way to stop them, and one way to start a wire server module and learn its address.
Stdlib only."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STOP_SECONDS = 10.0
"""How long a process has to exit after SIGTERM before it is killed."""


def processes_mentioning(marker: str) -> list[int]:
    """The pids (this one's aside) whose command line holds ``marker``: what a test looks
    for to see whether a command it started is still running, or which process runs it."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry.name))
    return found


def parent_of(pid: int) -> int | None:
    """The parent's pid of ``pid`` (None once it is gone)."""
    try:
        return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def stop_process(process: subprocess.Popen[str] | subprocess.Popen[bytes]) -> int:
    """SIGTERM, wait up to ``STOP_SECONDS``, SIGKILL if it has not exited; close its stdout.
    Returns the exit status (negative: the signal that ended it), so a caller can hold a
    server to exiting cleanly on SIGTERM."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()
    return process.returncode


@contextmanager
def module_server(module: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``python -m module``, which prints its base URL on its first line; yields that line
    and the process, which is stopped on the way out if the caller did not stop it."""
    process = subprocess.Popen([sys.executable, "-m", module], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip(), process
    finally:
        stop_process(process)
