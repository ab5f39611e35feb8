"""Workflow code replays the histories of runs started before it changed (ARCHITECTURE.md,
"Running on Temporal": a change to what the workflow decides is guarded with
``workflow.patched``). The history kept here is a real one: a chat of two messages drained by
the one activity ``run_chat_work`` before model and tool calls became activities of their own."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agentworld.runtime.chat_workflow import ChatWorkflow

HISTORIES = Path(__file__).parent / "histories"


def test_a_run_that_drained_with_run_chat_work_replays_on_the_current_workflow_code() -> None:
    text = (HISTORIES / "chat_drained_by_run_chat_work.json").read_text()
    events = json.loads(text)["events"]
    kinds = [
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in events
        if "activityTaskScheduledEventAttributes" in e
    ]
    assert kinds == ["run_chat_work", "run_chat_work"]  # the old branch is what is replayed
    history = WorkflowHistory.from_json("agentworld:w:chat_1a2269bc1f0e1b89179dc1baf23", text)

    result = asyncio.run(Replayer(workflows=[ChatWorkflow]).replay_workflow(history, raise_on_replay_failure=False))

    assert result.replay_failure is None, result.replay_failure
