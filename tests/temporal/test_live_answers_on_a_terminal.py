"""On Temporal with PostgreSQL, ``send`` and ``talk`` on a terminal show the answer a worker
gives as it streams — the chunks the worker relays, between the answer's start and its end read
from the event log — and show it once.

Real processes: an ``agentworld worker``, ``send`` and ``talk`` in a pseudo-terminal (pexpect),
the Temporal dev server and the loopback OpenAI wire server pacing its chunks.
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
ANSWER = "First the tests, then the tag, then the release notes."


class Screen:
    """What a command in a pseudo-terminal shows, escape codes removed."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child
        self.raw = ""

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw)

    def until(self, pattern: str, timeout: float = 60) -> str:
        """Read until ``pattern`` shows; the text so far."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text):
            assert time.monotonic() < deadline, f"{pattern!r} not shown:\n{self.text}"
            try:
                self.raw += self.child.read_nonblocking(65536, timeout=0.05)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                raise AssertionError(f"{pattern!r} not shown:\n{self.text}") from None
        return self.text

    def end(self) -> int:
        self.child.expect(pexpect.EOF)
        self.raw += self.child.before or ""
        self.child.close()
        return int(self.child.exitstatus)


def _team(tcli: Any, script: Any, server: OpenAIWireServer) -> None:
    script.by_agent["planner"] = lambda _body: Reply.text(ANSWER, chunk_size=5, chunk_delay=0.2)
    tcli("world", "create", "team")
    tcli("agent", "create", "team", "planner", "--provider", "openai", "--model", "m",
         "--base-url", server.base_url, "--system-prompt", "agent:planner")  # fmt: skip


def _spawn(db_url: str, env: dict[str, str], *args: str) -> Screen:
    return Screen(pexpect.spawn(
        sys.executable, ["-m", "agentworld", "--db", db_url, *args],
        env={**env, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}, encoding="utf-8",
        dimensions=(50, 200), timeout=60,
    ))  # fmt: skip


def _streamed(screen: Screen) -> None:
    """The answer showed in pieces as it came, then whole with its time, once."""
    early = screen.until(r"planner: First the")
    assert "release notes" not in early[early.index("planner: First the"):]  # still on its way
    screen.until(r"release notes\. \(\d+\.\d s\)")


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_send_on_a_terminal_streams_the_answer_a_worker_gives(
    tcli: Any, workers: Any, db_url: str, script: Any, server: OpenAIWireServer,
    temporal_env: dict[str, str],
) -> None:  # fmt: skip
    _team(tcli, script, server)
    workers.start()
    screen = _spawn(db_url, temporal_env, "send", "team", "@planner how do we ship?")

    _streamed(screen)

    assert screen.end() == 0, screen.text
    assert screen.text.count("then the tag") == 1  # shown live, not printed again at the end
    stored = tcli("messages", "team", "--json").json()["messages"]
    assert [(m["sender"], m["content"]) for m in stored] == [
        ("human", "@planner how do we ship?"), ("planner", ANSWER),
    ]


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_talk_streams_the_answer_a_worker_gives(
    tcli: Any, workers: Any, db_url: str, script: Any, server: OpenAIWireServer,
    temporal_env: dict[str, str],
) -> None:  # fmt: skip
    _team(tcli, script, server)
    workers.start()
    screen = _spawn(db_url, temporal_env, "talk", "team")
    screen.until(r"/help lists the commands")
    screen.until(r"team ›")
    screen.child.send("@planner how do we ship?\r")

    _streamed(screen)
    screen.until(r"release notes\. \(\d+\.\d s\)[\s\S]*team ›")
    screen.child.sendcontrol("d")

    assert screen.end() == 0, screen.text
    assert screen.text.count("then the tag") == 1
