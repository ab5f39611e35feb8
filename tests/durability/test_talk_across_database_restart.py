"""``agentworld talk`` outlives a PostgreSQL restart: while the database is down its looks at
the chat fail quietly, and once the server is back it shows what another process said in the
chat afterwards, once, without being restarted.

Real parts: ``talk`` in a pseudo-terminal (pexpect), the CLI's ``send`` in another process with
an offline scripted agent, and a PostgreSQL cluster of this test's own, stopped and started
with ``pg_ctl``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pexpect

from agentworld.testing.postgres import restartable_cluster

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r")


def test_talk_shows_what_another_process_said_after_a_restart(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "TERM": "xterm", "NO_COLOR": "1",
           "PROMPT_TOOLKIT_NO_CPR": "1"}
    env.pop("AGENTWORLD_DB", None)
    with restartable_cluster() as cluster:

        def cli(*args: str) -> str:
            done = subprocess.run([sys.executable, "-m", "agentworld", "--db", cluster.url, *args],
                                  env=env, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout

        cli("world", "create", "team")
        cli("agent", "create", "team", "bot", "--provider", "scripted", "--model", "echo")
        child = pexpect.spawn(
            sys.executable, ["-m", "agentworld", "--db", cluster.url, "talk", "team"],
            env=env, cwd=str(tmp_path), encoding="utf-8", dimensions=(50, 200), timeout=15,
        )
        screen = ""

        def shown(pattern: str, timeout: float) -> bool:
            nonlocal screen
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if re.search(pattern, ANSI.sub("", screen)):
                    return True
                try:
                    screen += child.read_nonblocking(65536, timeout=0.1)
                except pexpect.TIMEOUT:
                    continue
            return False

        try:
            assert shown(r"team ›", 30), ANSI.sub("", screen)
            cli("send", "team", "@bot before the outage")
            assert shown(r"echo: @bot before the outage", 15), ANSI.sub("", screen)

            cluster.stop()
            time.sleep(3)  # talk looks at the chat twice a second meanwhile
            cluster.start()

            cli("send", "team", "@bot after the outage")
            assert shown(r"echo: @bot after the outage", 20), ANSI.sub("", screen)[-3000:]
            time.sleep(1.5)
            assert shown(r"team ›", 5)
            child.read_nonblocking(65536, timeout=0.5) if child.isalive() else None
            text = ANSI.sub("", screen)
            assert text.count("echo: @bot after the outage") == 1, text[-3000:]
            assert child.isalive()
            child.sendcontrol("d")
            child.expect(pexpect.EOF, timeout=15)
        finally:
            if child.isalive():
                child.terminate(force=True)
