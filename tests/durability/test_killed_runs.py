"""A ``send`` killed with SIGKILL mid-turn (on SQLite and on PostgreSQL): the next process
finishes the work, nothing is lost, nothing runs twice, and a shell command dies with the
process that ran it."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentworld.storage.sql import SQLStorage
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec
from agentworld.testing.processes import processes_mentioning

KILLED_SEND_TAKES_ITS_TURN = pytest.mark.in_process_only(
    reason="on Temporal a worker runs the turn, so a killed send takes nothing with it (README, Running on Temporal)"
)

POLICY = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["echo", "sleep", "touch"]
decision = "allow"
priority = 100
"""


def _world(cli: Any, server: OpenAIWireServer, *options: str) -> None:
    cli("world", "create", "w", *options)
    cli(
        "agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1",
    )


def _turns(server: OpenAIWireServer) -> list[list[dict[str, Any]]]:
    return [r["messages"] for r in server.requests if r["messages"][0]["content"] == "agent:a1"]


def _start_send(db_url: str, tmp_path: Path, text: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", db_url, "send", "w", text],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)




@KILLED_SEND_TAKES_ITS_TURN
def test_a_send_killed_while_the_model_answers_is_answered_once_by_the_next_send(
    cli: Any, db_url: str, tmp_path: Path
) -> None:
    release = threading.Event()

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        if last == "@a1 slow question" and not release.is_set():
            release.wait(60)  # the first process is killed while this call is in flight
            return Reply.text("too late")
        return Reply.text(f"answer to: {last}")

    with OpenAIWireServer(responder=answer) as server:
        _world(cli, server)
        proc = _start_send(db_url, tmp_path, "@a1 slow question")
        try:
            _wait_for(lambda: len(_turns(server)) == 1, "the model call")
            _kill(proc)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()

        sent = cli("send", "w", "@a1 are you back?", "--json").json()

        spoken = [(m["role"], m["content"]) for m in sent["messages"]]
        assert spoken == [
            ("user", "@a1 are you back?"),
            ("assistant", "answer to: @a1 slow question"),
            ("assistant", "answer to: @a1 are you back?"),
        ]
        transcript = cli("messages", "w", "--json").json()["messages"]
        assert [m["content"] for m in transcript].count("answer to: @a1 slow question") == 1
        turns = _turns(server)
        assert [t[-1]["content"] for t in turns] == [
            "@a1 slow question", "@a1 slow question", "@a1 are you back?"
        ]
        assert turns[2][1:] == [
            *turns[1][1:],
            {"role": "assistant", "content": "answer to: @a1 slow question"},
            {"role": "user", "content": "@a1 are you back?"},
        ]


@KILLED_SEND_TAKES_ITS_TURN
def test_a_send_killed_while_its_shell_command_runs_takes_the_command_with_it(
    cli: Any, db_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    marker = f"sleep 2.{secrets.randbelow(10**6):06d}"  # unique: tests may run side by side
    command = f"touch started; {marker} && touch F"

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text(f"the tool said: {last['content']}")
        if last["content"] == "@a1 run it":
            return Reply.tools(
                ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": command}), id="call_run")
            )
        return Reply.text(f"answer to: {last['content']}")

    with OpenAIWireServer(responder=answer) as server:
        _world(cli, server, "--working-dir", str(work), "--policy", str(policy))
        proc = _start_send(db_url, tmp_path, "@a1 run it")
        try:
            _wait_for(lambda: (work / "started").exists() and bool(processes_mentioning(marker)),
                      "the shell command")
            _kill(proc)
        finally:
            if proc.poll() is None:
                proc.kill()

        # The command's processes die with the process that ran them, at once...
        _wait_for(lambda: not processes_mentioning(marker), "the command's processes to go", 0.5)
        time.sleep(3)
        assert not (work / "F").exists()  # ...so nothing it would have done after is done

        sent = cli("send", "w", "@a1 go on", "--json").json()

        (result,) = [m for m in sent["messages"] if m["role"] == "tool"]
        assert result["tool_call_id"] == "call_run"
        assert "interrupted" in json.loads(result["content"])["error"]
        said = [m["content"] for m in sent["messages"] if m["role"] == "assistant"]
        assert said[0].startswith("the tool said:") and "interrupted" in said[0]
        assert said[-1] == "answer to: @a1 go on"
        assert not (work / "F").exists()  # never run again (it would have made F by now)
        (log,) = cli("tool-logs", "w", "--json").json()["toolLogs"]
        assert (log["toolCallId"], log["status"]) == ("call_run", "interrupted")


@KILLED_SEND_TAKES_ITS_TURN
def test_a_send_killed_while_it_names_the_chat_leaves_the_title_and_the_lease_to_resume(
    cli: Any, db_url: str, tmp_path: Path
) -> None:
    """The answer is stored; the process dies while the model names the chat (SPEC O5), its
    lease still held. ``resume`` takes the chat up although its inbox is empty: it names it
    and lets it go."""
    release = threading.Event()

    def answer(body: dict[str, Any]) -> Reply:
        if "You name conversations" in str(body["messages"][0]["content"]):
            if not release.is_set():
                release.wait(60)  # the first process is killed while this call is in flight
                return Reply.text("Too late")
            return Reply.text("Budget talk")
        return Reply.text("the answer")

    def titles(server: OpenAIWireServer) -> int:
        return sum("You name conversations" in str(r["messages"][0]["content"]) for r in server.requests)

    def holder(chat_id: str) -> str | None:
        async def read() -> str | None:
            async with SQLStorage(db_url) as storage:
                return await storage.leases.holder("w", chat_id)

        return asyncio.run(read())

    with OpenAIWireServer(responder=answer) as server:
        _world(cli, server)
        proc = _start_send(db_url, tmp_path, "@a1 the budget")
        try:
            _wait_for(lambda: titles(server) == 1, "the title request")
            _kill(proc)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
        (chat,) = cli("chat", "list", "w", "--json").json()["chats"]
        assert chat["name"] == "New chat" and holder(chat["chatId"]) is not None

        cli("resume", "w")

        (chat,) = cli("chat", "list", "w", "--json").json()["chats"]
        assert chat["name"] == "Budget talk"
        assert holder(chat["chatId"]) is None
        transcript = cli("messages", "w", "--json").json()["messages"]
        assert [m["content"] for m in transcript] == ["@a1 the budget", "the answer"]
