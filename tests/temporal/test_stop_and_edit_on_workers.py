"""A person stops or edits a chat whose turn runs on a worker: Ctrl-C of `send` stops it there
(the shell command killed, recorded interrupted, nothing of the turn runs later), and `message
edit` takes the chat back while the model is still answering on the worker."""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.temporal.conftest import ALLOW_TOUCH_AND_SLEEP

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec
from agentworld.testing.processes import processes_mentioning

STOP_NOTE = "human stopped the agents' work in this chat."




def _world(tcli: Any, server: OpenAIWireServer, *options: str) -> None:
    tcli("world", "create", "w", *options)
    tcli("agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
         "--base-url", server.base_url, "--system-prompt", "agent:a1")


def _start(db_url: str, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", db_url, *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.both_backends
def test_ctrl_c_of_send_stops_the_turn_its_worker_runs(
    wait_for: Any, tcli: Any, workers: Any, db_url: str, temporal_env: dict[str, str], script: Any,
    server: OpenAIWireServer, tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW_TOUCH_AND_SLEEP)
    marker = f"sleep 6.{secrets.randbelow(10**6):06d}"

    def answer(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("too late")
        return Reply.tools(ToolCallSpec(
            name="shell_cmd", arguments=json.dumps({"command": f"touch started; {marker} && touch F"}), id="call_run"
        ))

    script.by_agent["a1"] = answer
    _world(tcli, server, "--working-dir", str(work), "--policy", str(policy))
    worker = workers.start()
    proc = _start(db_url, temporal_env, "send", "w", "@a1 run it", "--json")
    wait_for(lambda: (work / "started").exists() and bool(processes_mentioning(marker)), "the command")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 130, err
    assert err.splitlines()[-1].startswith("error: interrupted"), err
    assert json.loads(out)["interrupted"]["stopped"] is True
    wait_for(lambda: not processes_mentioning(marker), "the command killed on the worker", timeout=5)
    (log,) = tcli("tool-logs", "w", "--json").json()["toolLogs"]
    assert log["status"] == "interrupted"
    assert log["runner"].endswith(f":{worker.pid}")
    time.sleep(7)
    said = [m["content"] for m in tcli("messages", "w", "--json").json()["messages"]]
    assert said[-1] == STOP_NOTE and "too late" not in said
    assert not (work / "F").exists()
    assert tcli("send", "w", "hello nobody", "--json").json()["messages"][0]["content"] == "hello nobody"


@pytest.mark.both_backends
def test_an_edit_while_the_worker_runs_the_turn_takes_the_chat_back(
    wait_for: Any, tcli: Any, workers: Any, db_url: str, temporal_env: dict[str, str], script: Any,
    server: OpenAIWireServer,
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        if last == "@a1 slow":
            return Reply.text("too late", delay=8.0)
        return Reply.text(f"answer to: {last}")

    script.by_agent["a1"] = answer
    _world(tcli, server)
    workers.start()
    proc = _start(db_url, temporal_env, "send", "w", "@a1 slow", "--json")
    wait_for(lambda: any(r["messages"][-1].get("content") == "@a1 slow" for r in server.requests), "the model call")
    (asked,) = tcli("messages", "w", "--json").json()["messages"]

    edited = tcli("message", "edit", "w", asked["messageId"], "@a1 quick", "--json").json()

    assert [m["content"] for m in edited["messages"]] == ["@a1 quick", "answer to: @a1 quick"]
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    time.sleep(9)  # the slow answer would be stored by now
    said = [m["content"] for m in tcli("messages", "w", "--json").json()["messages"]]
    assert said == ["@a1 quick", "answer to: @a1 quick"]
