"""Workflow code replays the histories of runs started before it changed (ARCHITECTURE.md,
"Running on Temporal": a change to what the workflow decides is guarded with
``workflow.patched``). The histories kept here are real ones, recorded from a dev server and
``agentworld worker``: a chat of two messages drained by the one activity ``run_chat_work``
(before model and tool calls became activities of their own), and a chat whose first turn made
a tool call, with model and tool calls as activities. Replayed in Temporal's sandbox, they also
show the workflow code stays deterministic (the workers run it unsandboxed)."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agentworld.runtime.chat_workflow import ChatWorkflow

HISTORIES = Path(__file__).parent / "histories"


@pytest.mark.parametrize(
    ("name", "activities"),
    [
        ("chat_drained_by_run_chat_work", ["run_chat_work", "run_chat_work"]),
        ("chat_with_a_tool_call_in_step_activities", ["model_call", "tool_run", "model_call", "model_call"]),
    ],
)
def test_a_recorded_run_replays_on_the_current_workflow_code(name: str, activities: list[str]) -> None:
    text = (HISTORIES / f"{name}.json").read_text()
    events = json.loads(text)["events"]
    kinds = [
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in events
        if "activityTaskScheduledEventAttributes" in e
    ]
    assert kinds == activities  # the branch of the workflow code that is replayed
    started = events[0]["workflowExecutionStartedEventAttributes"]
    ref = json.loads(base64.b64decode(started["input"]["payloads"][0]["data"]))  # the run's ChatRef
    history = WorkflowHistory.from_json(f"agentworld:{ref['world']}:{ref['chat_id']}", text)

    result = asyncio.run(Replayer(workflows=[ChatWorkflow]).replay_workflow(history, raise_on_replay_failure=False))

    assert result.replay_failure is None, result.replay_failure
