"""Approvals on Temporal: a call asked on a worker is answered by `agentworld approve` in another
process and runs on the worker that serves the world's workerQueue (its working directory); an
unanswered request times out by its workflow's durable timer while only workers run."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.temporal.conftest import runs_command

from agentworld.testing.openai_wire import OpenAIWireServer


def _world(tcli: Any, server: OpenAIWireServer, work: Path, *options: str) -> None:
    tcli("world", "create", "w", "--working-dir", str(work), *options)
    tcli(
        "agent", "create", "w", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1",
    )


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_an_approval_answered_elsewhere_runs_on_the_worker_of_the_working_directory(
    tcli: Any, workers: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    queue = f"host-{uuid.uuid4().hex}"
    script.by_agent["a1"] = runs_command("touch made")
    _world(tcli, server, work, "--worker-queue", queue)
    elsewhere = workers.start()  # serves the deployment's queue only
    holder = workers.start(queue)  # the host that holds the working directory

    sent = tcli("send", "w", "@a1 make it", "--json").json()

    (approval,) = sent["pendingApprovals"]
    assert approval["toolArgs"] == {"command": "touch made"}
    assert not (work / "made").exists()
    done = tcli("approve", "w", approval["approvalId"], "--decision", "approve", "--json").json()
    assert (work / "made").exists()
    assert done["messages"][-1]["content"].startswith("result: ")
    (log,) = tcli("tool-logs", "w", "--json").json()["toolLogs"]
    assert log["status"] == "ok"
    assert log["runner"].rsplit(":", 1)[1] == str(holder.pid)
    assert elsewhere.poll() is None


@pytest.mark.both_backends
def test_an_unanswered_approval_times_out_with_only_the_workers_running(
    wait_for: Any, tcli: Any, workers: Any, db_url: str, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script.by_agent["a1"] = runs_command("touch never")
    _world(tcli, server, work, "--approval-timeout", "2")
    workers.start()

    sent = tcli("send", "w", "@a1 make it", "--json").json()
    assert len(sent["pendingApprovals"]) == 1

    # No process of ours runs now but the worker: the workflow's timer must end the request
    # and the worker must resume the loop (the model hears the denial).
    def heard() -> list[str]:
        return [
            str(r["messages"][-1].get("content")) for r in server.requests
            if r["messages"][-1]["role"] == "tool"
        ]

    wait_for(lambda: bool(heard()), "the loop resumed after the timeout", timeout=30)
    assert "timed out after 2 s" in heard()[0]
    assert not (work / "never").exists()
    assert tcli("approvals", "w", "--json").json() == {"approvals": []}


@pytest.mark.both_backends
def test_send_approve_deny_denies_on_the_worker_and_exits_3(
    tcli: Any, workers: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script.by_agent["a1"] = runs_command("touch refused")
    _world(tcli, server, work)
    workers.start()

    result = tcli("send", "w", "@a1 make it", "--approve", "deny", check=False)

    assert result.code == 3, result.stderr
    assert "a1 → shell_cmd" in result.stderr
    assert not (work / "refused").exists()
    assert tcli("approvals", "w", "--json").json() == {"approvals": []}
    told = [r["messages"][-1] for r in server.requests if r["messages"][-1]["role"] == "tool"]
    assert len(told) == 1 and "nobody can be asked in this run" in told[0]["content"]
    # The next message from an attended send asks again: the flag went with that run only.
    script.by_agent["a1"] = runs_command("touch asked")
    sent = tcli("send", "w", "@a1 again", "--json").json()
    assert len(sent["pendingApprovals"]) == 1
