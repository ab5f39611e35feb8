"""Stopping a chat's work on a person's word (``AgentWorld.stop``: Ctrl-C in ``talk``).

Real shells in a temp dir and the loopback OpenAI wire server: a stopped shell command's
process is gone at once and its effect never happens; the call is recorded as stopped, the
queued work is dropped, what was stored stays, and the next message is answered normally.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

POLICY = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["sleep", "touch"]
decision = "allow"
priority = 100
"""


async def _until(condition: Callable[[], Any], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def _turns(server: OpenAIWireServer) -> list[list[dict[str, Any]]]:
    return [r["messages"] for r in server.requests if r["messages"][0]["content"] == "agent:a1"]


async def test_stop_kills_the_running_tool_records_it_and_the_next_message_works(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    marker = tmp_path / "effect"
    await make_world("a1", working_dir=str(tmp_path), policy_files=[str(policy)])
    script.by_agent["a1"] = lambda body: (
        Reply.text("back again")
        if "after the stop" in (body["messages"][-1].get("content") or "")
        else Reply.tools(
            ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": f"sleep 3 && touch {marker}"}))
        )
    )
    send = asyncio.create_task(aw.send("w", "@a1 do the slow thing"))
    await _until(
        lambda: _running(aw), "the shell command to start"
    )

    outcome = await aw.stop("w", by="tester")
    await asyncio.wait_for(send, 10)  # the send returns: its chat has nothing left to do

    assert outcome.stopped and len(outcome.interrupted) == 1 and outcome.skipped == ()
    assert outcome.killed == outcome.interrupted
    (log,) = await aw.tool_logs("w")
    assert log.status == "interrupted"
    chat = send.result().chat_id
    transcript = await aw.storage.transcript("w", chat)
    result = next(m for m in transcript if m.role == "tool")
    assert "tester stopped the turn while this command ran; it was killed" in (result.content or "")
    assert transcript[-1].role == "system" and "tester stopped" in (transcript[-1].content or "")
    assert await aw.storage.inbox.items("w", chat) == []
    await asyncio.sleep(3.5)
    assert not marker.exists()  # the command's process group died with the stop

    after = await aw.send("w", "@a1 after the stop", chat_id=chat)
    assert after.messages[-1].content == "back again"
    last_request = _turns(server)[-1]
    assert any("stopped the turn" in (m.get("content") or "") for m in last_request if m["role"] == "tool")


async def _running(aw: AgentWorld) -> bool:
    return any(log.status == "running" for log in await aw.tool_logs("w"))


async def test_stop_during_a_slow_answer_stores_no_answer_and_drops_the_other_agents_turns(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", "a2")
    asked = threading.Event()

    def slow(body: dict[str, Any]) -> Reply:
        asked.set()
        return Reply(content="too late", delay=2.0)

    script.by_agent["a1"] = slow
    script.by_agent["a2"] = lambda body: Reply.text("a2 here")
    send = asyncio.create_task(aw.send("w", "@a1 @a2 both of you"))
    await asyncio.to_thread(asked.wait, 10)

    outcome = await aw.stop("w")
    await asyncio.wait_for(send, 10)

    assert outcome.stopped and outcome.dropped >= 1
    transcript = await aw.storage.transcript("w", send.result().chat_id)
    assert [m.sender for m in transcript] == ["human", "system"]  # no answer from anyone
    assert "human stopped" in (transcript[-1].content or "")


async def test_stopping_an_idle_chat_changes_nothing(aw: AgentWorld, make_world: Any) -> None:
    await make_world("a1")
    chat = (await aw.new_chat("w")).chat_id
    outcome = await aw.stop("w", chat)
    assert not outcome.stopped
    assert await aw.storage.transcript("w", chat) == []


async def test_a_send_that_stops_waiting_leaves_the_turn_running(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    """``send(timeout=...)`` gives up waiting, never the work: the answer still lands."""
    await make_world("a1")
    script.by_agent["a1"] = lambda body: Reply(content="worth the wait", delay=1.0)

    result = await aw.send("w", "@a1 slowly", timeout=0.2)

    assert result.timed_out
    runtime = await aw.runtime("w")
    await runtime.wait_until_idle(result.chat_id, timeout=10)
    transcript = await aw.storage.transcript("w", result.chat_id)
    assert transcript[-1].content == "worth the wait"


async def test_stop_while_an_approved_call_runs_gives_it_a_result(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "effect"
    await make_world("a1", working_dir=str(tmp_path))
    script.by_agent["a1"] = lambda body: (
        Reply.text("finished")
        if body["messages"][-1]["role"] == "tool"
        else Reply.tools(
            ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": f"sleep 3 && touch {marker}"}))
        )
    )
    asked = await aw.send("w", "@a1 do it")
    (approval,) = asked.pending_approvals
    approving = asyncio.create_task(
        aw.approve("w", approval.tool_call_id, decision="approve", scope="once")
    )
    await _until(lambda: _running(aw), "the approved command to start")

    outcome = await aw.stop("w", asked.chat_id)
    await asyncio.wait_for(approving, 10)

    assert outcome.stopped and len(outcome.interrupted) == 1
    memory = await aw.storage.memory("w", "a1", asked.chat_id)
    answered = {m.tool_call_id for m in memory if m.role == "tool"}
    calls = {c.id for m in memory if m.tool_calls for c in m.tool_calls}
    assert calls <= answered  # every call the model made has its result: the memory is whole
    assert [log.status for log in await aw.tool_logs("w")] == ["interrupted"]
    await asyncio.sleep(3.5)
    assert not marker.exists()


def _processes_with(word: str) -> list[int]:
    """Live (non-zombie) processes whose command line holds ``word``."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            state = Path("/proc", name, "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = Path("/proc", name, "cmdline").read_bytes()
        except OSError:
            continue
        if state != "Z" and word.encode() in cmdline:
            found.append(int(name))
    return found


def _started(word: str) -> Callable[[], Any]:
    async def check() -> bool:
        return bool(_processes_with(word))

    return check


def _gone(word: str) -> Callable[[], Any]:
    async def check() -> bool:
        return not _processes_with(word)

    return check


@pytest.mark.parametrize("sandbox", ["on", "off"])
async def test_stop_kills_the_background_jobs_of_the_running_command_and_says_so(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path, sandbox: str
) -> None:
    """``sleep N &`` started by an allowed line dies with the stop, contained or not, and the
    stop reports the call as killed because it was."""
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    unique = f"100.{random.randrange(10**8):08d}"  # a sleep only this test starts
    await make_world("a1", working_dir=str(tmp_path), policy_files=[str(policy)], sandbox=sandbox)
    script.by_agent["a1"] = lambda body: Reply.tools(
        ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": f"sleep {unique} & sleep 30"}))
    )
    send = asyncio.create_task(aw.send("w", "@a1 start it"))
    await _until(lambda: _running(aw), "the shell command to start")
    await _until(_started(unique), "the background job to start", timeout=10)

    outcome = await aw.stop("w", by="tester")
    await asyncio.wait_for(send, 10)

    assert outcome.killed == outcome.interrupted and len(outcome.killed) == 1
    await _until(_gone(unique), "the background job to be gone", timeout=1)
