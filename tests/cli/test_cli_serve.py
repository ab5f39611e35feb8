"""``agentworld serve`` refuses to start as every command refuses: one ``error: …`` line and
exit 1, never uvicorn's traceback and exit 3 (SPEC §3; docs/cli.md keeps 3 for ``send
--approve deny``); and it says it serves only once it does.

Real ``agentworld serve`` processes on real files and sockets.
"""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest


def broken_database(kind: str, tmp_path: Path, cli: Any) -> str:
    """A database URL every command refuses to open."""
    if kind == "not a database":
        (tmp_path / "notes.db").write_text("hello, not SQLite\n")
        return f"sqlite:///{tmp_path / 'notes.db'}"
    if kind == "from a newer version":
        url = f"sqlite:///{tmp_path / 'newer.db'}"
        cli("world", "list", db=url)
        with sqlite3.connect(tmp_path / "newer.db") as raw:
            raw.execute("UPDATE schema_version SET version = 99")
        return url
    if kind == "in /proc":
        return "sqlite:////proc/x.db"
    return "postgresql://u:p@127.0.0.1:1/db"  # nothing listens on port 1


@pytest.mark.parametrize("kind", ["not a database", "from a newer version", "in /proc", "unreachable"])
def test_a_database_that_cannot_be_opened_is_one_line_and_exit_1_as_elsewhere(
    cli: Any, tmp_path: Path, kind: str
) -> None:
    url = broken_database(kind, tmp_path, cli)

    served = cli("serve", "--port", "0", db=url, check=False)
    listed = cli("world", "list", db=url, check=False)

    assert listed.code == 1 and listed.stderr.startswith("error: ")
    assert (served.code, served.stdout, served.stderr) == (1, "", listed.stderr)


def test_a_port_in_use_is_one_line_and_exit_1(cli: Any) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        served = cli("serve", "--port", str(port), check=False)

    assert (served.code, served.stdout) == (1, "")
    assert served.stderr == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--cors-origin", "*"), "error: --cors-origin '*': any origin is refused"),
        (("--cors-origin", "https://app.example.org/"), "error: --cors-origin 'https://app.example.org/': an origin has no path"),
        (("--allowed-host", "app.example.org:8080"), "error: --allowed-host 'app.example.org:8080': give the host name without a port"),
    ],
)
def test_an_origin_or_host_that_would_open_too_much_or_match_nothing_is_refused_before_listening(
    cli: Any, flags: tuple[str, str], said: str
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    served = cli("serve", "--port", str(port), *flags, check=False)

    assert (served.code, served.stdout) == (1, "")
    assert served.stderr.startswith(said) and served.stderr.count("\n") == 1
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))  # nothing was left listening there


def test_it_says_serving_once_it_serves_on_the_port_it_really_has(db_url: str, tmp_path: Path) -> None:
    """With ``--port 0`` the system picks the port: the line names that one, and the server
    answers there as soon as the line is out."""
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("AGENTWORLD_DB", None)
    with subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", db_url, "serve", "--port", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    ) as process:  # fmt: skip
        try:
            assert process.stderr is not None
            line = process.stderr.readline()
            found = re.fullmatch(r"agentworld serving http://127\.0\.0\.1:(\d+) \(API docs at /docs\)\n", line)
            assert found is not None, line
            assert int(found[1]) != 0
            assert httpx.get(f"http://127.0.0.1:{found[1]}/health", timeout=20).json() == {"status": "ok"}
        finally:
            process.terminate()
            process.wait(timeout=20)
