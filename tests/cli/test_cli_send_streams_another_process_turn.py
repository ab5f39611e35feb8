"""On PostgreSQL, ``send`` on a terminal shows an answer that another process computes as it
streams: the process that held the chat (a ``send`` before it) answers, relays its chunks, and
the terminal shows them once, between the answer's start and end read from the event log. A
turn the terminal's own process runs comes both on its bus and from the log: shown once.

Real processes: two ``agentworld send`` on one PostgreSQL database, the second in a
pseudo-terminal (pexpect), and the loopback OpenAI wire server pacing its chunks.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pexpect
import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SECOND = "Second: first the tests, then the tag, then the release notes."


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_send_on_a_terminal_streams_an_answer_the_process_holding_the_chat_gives(
    cli: Any, db_url: str, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    def planner(body: dict[str, Any]) -> Reply:
        if "one" in str(body["messages"][-1].get("content")):
            return Reply.text("First answer.", delay=2.0)  # holds the chat while two is sent
        return Reply.text(SECOND, chunk_size=5, chunk_delay=0.2)

    script.by_agent["planner"] = planner
    cli("world", "create", "team")
    cli("agent", "create", "team", "planner", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:planner")  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path), "TERM": "xterm", "NO_COLOR": "1", "AGENTWORLD_LLM_RETRIES": "1"}
    env.pop("AGENTWORLD_DB", None)
    holder = subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", db_url, "send", "team", "@planner one"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not any("one" in str(r["messages"][-1].get("content")) for r in server.requests):
        assert time.monotonic() < deadline and holder.poll() is None, "the first send never asked"
        time.sleep(0.05)
    child = pexpect.spawn(
        sys.executable, ["-m", "agentworld", "--db", db_url, "send", "team", "@planner two"],
        env=env, encoding="utf-8", dimensions=(50, 200), timeout=60,
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

    early = shown_until(r"planner: Second")
    assert "release notes" not in early[early.index("planner: Second"):]  # still on its way
    shown_until(r"release notes\. \(\d+\.\d s\)")
    child.expect(pexpect.EOF)
    raw += child.before or ""
    child.close()
    holder.communicate(timeout=60)

    text = ANSI.sub("", raw)
    assert child.exitstatus == 0, text
    assert holder.returncode == 0
    assert text.count("then the tag") == 1  # shown live, not printed again at the end
    stored = cli("messages", "team", "--json").json()["messages"]
    assert sorted(m["content"] for m in stored) == sorted(["@planner one", "First answer.", "@planner two", SECOND])


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_send_on_a_terminal_shows_its_own_turn_once_on_postgresql(
    cli: Any, db_url: str, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    script.by_agent["planner"] = lambda _body: Reply.text(SECOND, chunk_size=5, chunk_delay=0.1)
    cli("world", "create", "team")
    cli("agent", "create", "team", "planner", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:planner")  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path), "TERM": "xterm", "NO_COLOR": "1", "AGENTWORLD_LLM_RETRIES": "1"}
    env.pop("AGENTWORLD_DB", None)
    child = pexpect.spawn(
        sys.executable, ["-m", "agentworld", "--db", db_url, "send", "team", "@planner go"],
        env=env, encoding="utf-8", dimensions=(50, 200), timeout=60,
    )  # fmt: skip
    child.expect(pexpect.EOF)
    text = ANSI.sub("", child.before or "")
    child.close()

    assert child.exitstatus == 0, text
    assert text.count("then the tag") == 1
    assert text.count("planner: ") == 1
    assert re.search(r"planner: Second: .*release notes\. \(\d+\.\d s\)", text), text
