"""Two workers on one PostgreSQL database share many chats fed by `send` and HTTP; one is
SIGKILLed mid-turn while it runs a shell command: the other finishes every turn, each message
is answered exactly once, and the command is recorded interrupted, never run again (SPEC S2)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.temporal.conftest import ALLOW_TOUCH_AND_SLEEP

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec
from agentworld.testing.processes import parent_of, processes_mentioning

FULL = os.environ.get("AGENTWORLD_TEST_FULL_ACCEPTANCE") == "1"
"""The issue's own size — 200 messages over 20 chats — instead of the suite's smaller one."""
CHATS_BY_SEND = 10 if FULL else 3
CHATS_BY_HTTP = 10 if FULL else 2
MESSAGES_PER_CHAT = 10 if FULL else 4
WAIT = 600 if FULL else 180


def _serve(db_url: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", db_url, "serve", "--port", "0"],
        env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("agentworld serving "):
            return proc, line.split()[2]
    raise AssertionError(f"serve did not start ({proc.wait()})")


def _post(base: str, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _running(marker: str, workers: list[subprocess.Popen[str]]) -> subprocess.Popen[str]:
    """The worker whose process tree runs the command holding ``marker``."""
    by_pid = {w.pid: w for w in workers}
    for pid in processes_mentioning(marker):
        ancestor: int | None = pid
        while ancestor is not None and ancestor > 1:
            if ancestor in by_pid:
                return by_pid[ancestor]
            ancestor = parent_of(ancestor)
    raise AssertionError(f"no worker runs {marker!r}")


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_worker_killed_mid_turn_leaves_every_turn_to_the_other(
    wait_for: Any, tcli: Any, workers: Any, db_url: str, temporal_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW_TOUCH_AND_SLEEP)
    marker = f"sleep 8.{secrets.randbelow(10**6):06d}"
    command = f"touch started; {marker} && touch F"

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text(f"the tool said: {last['content']}")
        if last["content"] == "@a1 run it":
            return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": command}), id="call_run"))
        time.sleep(0.2)  # a model with some latency: turns are in flight when the worker dies
        return Reply.text(f"answer to: {last['content']}")

    with OpenAIWireServer(responder=answer) as server:
        tcli("world", "create", "w", "--working-dir", str(work), "--policy", str(policy))
        tcli("agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
             "--base-url", server.base_url, "--system-prompt", "agent:a1")
        chats = [tcli("chat", "new", "w", "--json").json()["chatId"] for _ in range(CHATS_BY_SEND + CHATS_BY_HTTP + 1)]
        tool_chat, by_send, by_http = chats[0], chats[1:1 + CHATS_BY_SEND], chats[1 + CHATS_BY_SEND:]
        first, second = workers.start(), workers.start()
        served, base = _serve(db_url, temporal_env)
        try:
            running = subprocess.Popen(
                [sys.executable, "-m", "agentworld", "--db", db_url, "send", "w", "@a1 run it",
                 "--chat", tool_chat, "--json"],
                env=temporal_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            failures: list[str] = []

            def send_all(chat: str) -> None:
                for i in range(MESSAGES_PER_CHAT):
                    done = tcli("send", "w", f"@a1 {chat} m{i}", "--chat", chat, check=False, timeout=WAIT)
                    if done.code != 0:
                        failures.append(done.stderr)

            senders = [threading.Thread(target=send_all, args=(c,)) for c in by_send]
            for thread in senders:
                thread.start()
            for i in range(MESSAGES_PER_CHAT):
                for chat in by_http:
                    _post(base, f"/api/worlds/w/chats/{chat}/messages", {"text": f"@a1 {chat} m{i}"})

            wait_for(lambda: (work / "started").exists(), "the shell command to start")
            # Killed at once (found by its process tree, not by a command that may take
            # seconds under this load): the command must be mid-sleep when its worker dies.
            victim = _running(marker, [first, second])
            survivor = second if victim is first else first
            workers.kill(victim)
            (log,) = tcli("tool-logs", "w", "--json").json()["toolLogs"]
            assert log["runner"].endswith(f":{victim.pid}")

            out, err = running.communicate(timeout=120)
            assert running.returncode == 0, err
            for thread in senders:
                thread.join(WAIT)
            assert failures == []

            def answered(chat: str) -> bool:
                messages = tcli("messages", "w", "--chat", chat, "--json").json()["messages"]
                return sum(m["role"] == "assistant" for m in messages) >= MESSAGES_PER_CHAT

            wait_for(lambda: all(answered(c) for c in by_http), "the HTTP messages answered", timeout=WAIT)
        finally:
            served.terminate()
            served.wait(30)
            if served.stderr is not None:
                served.stderr.close()

        sent = json.loads(out)
        (result,) = [m for m in sent["messages"] if m["role"] == "tool"]
        assert "interrupted" in json.loads(result["content"])["error"]
        (log,) = tcli("tool-logs", "w", "--json").json()["toolLogs"]
        assert (log["toolCallId"], log["status"]) == ("call_run", "interrupted")
        time.sleep(9)  # longer than the command's sleep
        assert not (work / "F").exists()  # the command died with its worker, never ran again
        for chat in by_send + by_http:
            messages = tcli("messages", "w", "--chat", chat, "--json").json()["messages"]
            asked = [m["content"] for m in messages if m["role"] == "user"]
            said = Counter(m["content"] for m in messages if m["role"] == "assistant")
            assert asked == [f"@a1 {chat} m{i}" for i in range(MESSAGES_PER_CHAT)]
            assert said == Counter(f"answer to: @a1 {chat} m{i}" for i in range(MESSAGES_PER_CHAT))
        assert survivor.poll() is None
        assert workers.stop(survivor) == 0
