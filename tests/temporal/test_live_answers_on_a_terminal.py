"""On Temporal with PostgreSQL, ``send`` on a terminal shows the answer a worker gives as it
streams — the chunks the worker relays, between the answer's start and its end read from the
event log — and prints it once.

Real processes: an ``agentworld worker``, ``send`` in a pseudo-terminal (pexpect), the
Temporal dev server and the loopback OpenAI wire server pacing its chunks.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any

import pexpect
import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_send_on_a_terminal_streams_the_answer_a_worker_gives(
    tcli: Any, workers: Any, db_url: str, script: Any, server: OpenAIWireServer,
    temporal_env: dict[str, str],
) -> None:  # fmt: skip
    answer = "First the tests, then the tag, then the release notes."
    script.by_agent["planner"] = lambda _body: Reply.text(answer, chunk_size=5, chunk_delay=0.2)
    tcli("world", "create", "team")
    tcli("agent", "create", "team", "planner", "--provider", "openai", "--model", "m",
         "--base-url", server.base_url, "--system-prompt", "agent:planner")  # fmt: skip
    workers.start()
    child = pexpect.spawn(
        sys.executable, ["-m", "agentworld", "--db", db_url, "send", "team", "@planner how do we ship?"],
        env={**temporal_env, "TERM": "xterm"}, encoding="utf-8", dimensions=(50, 200), timeout=60,
    )  # fmt: skip
    raw = ""

    def shown_until(pattern: str) -> str:
        nonlocal raw
        deadline = time.monotonic() + 60
        while not re.search(pattern, ANSI.sub("", raw)):
            assert time.monotonic() < deadline, f"{pattern!r} not shown:\n{ANSI.sub('', raw)}"
            try:
                raw += child.read_nonblocking(65536, timeout=0.05)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                raise AssertionError(f"{pattern!r} not shown:\n{ANSI.sub('', raw)}") from None
        return ANSI.sub("", raw)

    early = shown_until(r"planner: First the")
    assert "release notes" not in early  # the rest is still on its way
    shown_until(r"release notes\. \(\d+\.\d s\)")
    child.expect(pexpect.EOF)
    raw += child.before or ""
    child.close()

    assert child.exitstatus == 0, ANSI.sub("", raw)
    assert ANSI.sub("", raw).count("then the tag") == 1  # shown live, not printed again at the end
    stored = tcli("messages", "team", "--json").json()["messages"]
    assert [(m["sender"], m["content"]) for m in stored] == [
        ("human", "@planner how do we ship?"), ("planner", answer),
    ]
