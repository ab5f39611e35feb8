"""Each model call and each tool call of a chat on Temporal is an activity of its own (SPEC S1),
read from the workflow's history on the dev server: model calls retried when their worker dies,
tool calls on the world's ``workerQueue`` and never retried — a tool call whose worker was
SIGKILLed is recorded interrupted by the next activity and the model decides (S2)."""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from tests.temporal.conftest import ALLOW_TOUCH_AND_SLEEP, runs_command

from agentworld.runtime.engine import workflow_id
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec
from agentworld.testing.processes import parent_of, processes_mentioning


def _history(address: str, chat_id: str) -> list[HistoryEvent]:
    async def read() -> list[HistoryEvent]:
        client = await Client.connect(address)
        history = await client.get_workflow_handle(workflow_id("w", chat_id)).fetch_history()
        return list(history.events)

    return asyncio.run(read())


def _scheduled(events: list[HistoryEvent]) -> list[tuple[str, str, int]]:
    """The activities the workflow scheduled: type, task queue, most attempts (0: unlimited)."""
    found = []
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled = event.activity_task_scheduled_event_attributes
            found.append(
                (scheduled.activity_type.name, scheduled.task_queue.name, scheduled.retry_policy.maximum_attempts)
            )
    return found


def _world(tcli: Any, server: OpenAIWireServer, work: Path, policy: Path, queue: str) -> str:
    tcli("world", "create", "w", "--working-dir", str(work), "--policy", str(policy), "--worker-queue", queue)
    tcli(
        "agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1",
    )
    chat_id: str = tcli("chat", "new", "w", "--json").json()["chatId"]
    return chat_id


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_each_model_call_and_each_tool_call_is_an_activity_of_its_own(
    tcli: Any, workers: Any, script: Any, server: OpenAIWireServer, temporal_address: str, tmp_path: Path
) -> None:
    work, policy = tmp_path / "work", tmp_path / "policy.toml"
    work.mkdir()
    policy.write_text(ALLOW_TOUCH_AND_SLEEP)
    queue = f"host-{uuid.uuid4().hex}"
    script.by_agent["a1"] = runs_command("touch made")
    chat_id = _world(tcli, server, work, policy, queue)
    workers.start(queue)

    sent = tcli("send", "w", "@a1 make it", "--chat", chat_id, "--json").json()

    assert sent["messages"][-1]["content"].startswith("result: ")
    assert (work / "made").exists()
    activities = _scheduled(_history(temporal_address, chat_id))
    assert [name for name, _queue, _most in activities] == ["model_call", "tool_run", "model_call"]
    (model, _q1, model_most), (_t, tool_queue, tool_most), _second = activities
    assert tool_queue == queue and tool_most == 1  # the host of the directory; never retried
    assert model == "model_call" and model_most == 0  # retried while it fails


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_tool_call_whose_worker_dies_is_not_retried_and_the_model_hears_it_was_interrupted(
    wait_for: Any, tcli: Any, workers: Any, script: Any, server: OpenAIWireServer,
    temporal_address: str, temporal_env: dict[str, str], db_url: str, tmp_path: Path,
) -> None:
    work, policy = tmp_path / "work", tmp_path / "policy.toml"
    work.mkdir()
    policy.write_text(ALLOW_TOUCH_AND_SLEEP)
    queue = f"host-{uuid.uuid4().hex}"
    marker = f"sleep 6.{secrets.randbelow(10**6):06d}"
    script.by_agent["a1"] = runs_command(f"touch started; {marker} && touch finished")
    chat_id = _world(tcli, server, work, policy, queue)
    first, second = workers.start(queue), workers.start(queue)

    sending = subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", db_url, "send", "w", "@a1 run it", "--chat", chat_id, "--json"],
        env=temporal_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    wait_for(lambda: (work / "started").exists(), "the command to start")
    (running,) = [w for w in (first, second) if _runs_in_tree(marker, w.pid)]
    workers.kill(running)

    out, err = sending.communicate(timeout=120)
    assert sending.returncode == 0, err
    answer = json.loads(out)["messages"][-1]
    assert answer["content"].startswith("result: ") and "interrupted" in answer["content"]
    (log,) = tcli("tool-logs", "w", "--json").json()["toolLogs"]
    assert log["status"] == "interrupted"
    events = _history(temporal_address, chat_id)
    assert [name for name, _q, _m in _scheduled(events)] == ["model_call", "tool_run", "model_call"]
    started = [e for e in events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED]
    assert len(started) == 3  # one attempt each: the tool call was not run again
    assert any(e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT for e in events)
    time.sleep(7)  # longer than the command's sleep
    assert not (work / "finished").exists()
    survivor = second if running is first else first
    assert survivor.poll() is None


def _runs_in_tree(marker: str, root: int) -> bool:
    for pid in processes_mentioning(marker):
        ancestor: int | None = pid
        while ancestor is not None and ancestor > 1:
            if ancestor == root:
                return True
            ancestor = parent_of(ancestor)
    return False


HOOK = '''
async def after_results(event, respond):
    if event.kind == "tool_call":
        await respond("@human the hook speaks after the results", enqueue_after="tool_results")
'''


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_hooks_reply_after_the_results_is_said_on_a_worker(
    tcli: Any, workers: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    """A world's hook answers a batch with ``enqueue_after="tool_results"``: its reply is held
    in the worker's memory, so the batch's calls run in the model call's activity, not one
    activity each, and the reply follows their results."""
    work, policy, hooks = tmp_path / "work", tmp_path / "policy.toml", tmp_path / "hooks"
    work.mkdir()
    hooks.mkdir()
    (hooks / "late_reply.py").write_text(HOOK)
    policy.write_text(ALLOW_TOUCH_AND_SLEEP)
    env = {"PYTHONPATH": str(hooks)}
    script.by_agent["a1"] = runs_command("touch made")
    tcli("world", "create", "w", "--working-dir", str(work), "--policy", str(policy),
         "--hook", "late_reply:after_results", env=env)
    tcli("agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
         "--base-url", server.base_url, "--system-prompt", "agent:a1")
    workers.start(env=env)

    sent = tcli("send", "w", "@a1 make it", "--json", env=env).json()

    said = [(m["role"], m.get("content")) for m in sent["messages"]]
    assert said[-1] == ("assistant", "@human the hook speaks after the results")
    assert said[-2][0] == "tool" and '"exit_code": 0' in said[-2][1]
    assert (work / "made").exists()
    assert not any(m.get("content", "").startswith("result: ") for m in sent["messages"] if m.get("content"))


def _always_calls_a_tool(body: dict[str, Any]) -> Reply:
    return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": "touch again"}), id="call_1"))


@pytest.mark.parametrize(
    ("settings", "ending"),
    [
        (("--max-iterations", "3", "--turn-limit", "50"), "stopped after 3 LLM iterations"),
        (("--max-iterations", "10", "--turn-limit", "2"), "@human Turn limit reached (2 LLM calls)"),
    ],
)
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_loop_split_over_activities_keeps_its_iteration_cap_and_turn_limit(
    tcli: Any, workers: Any, server: OpenAIWireServer, script: Any, tmp_path: Path,
    settings: tuple[str, ...], ending: str,
) -> None:
    """Every model call is an activity of its own, so the loop's count of calls travels with
    its inbox item: a model that never stops calling tools is stopped at the cap, and a fresh
    budget allows its first call once, not once per activity."""
    work, policy = tmp_path / "work", tmp_path / "policy.toml"
    work.mkdir()
    policy.write_text(ALLOW_TOUCH_AND_SLEEP)
    script.by_agent["a1"] = _always_calls_a_tool
    tcli("world", "create", "w", "--working-dir", str(work), "--policy", str(policy), *settings)
    tcli("agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
         "--base-url", server.base_url, "--system-prompt", "agent:a1")
    workers.start()

    tcli("send", "w", "@a1 go", check=False)  # exits 1 at the cap: the turn ended in an error

    calls = [r for r in server.requests if r["messages"][0]["content"] == "agent:a1"]  # not the title's
    assert len(calls) == (2 if "Turn limit" in ending else 3)
    messages = tcli("messages", "w", "--json").json()["messages"]
    assert ending in messages[-1]["content"]
