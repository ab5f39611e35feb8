"""The Temporal dev server the engine's tests run on starts offline from the PyPI CLI and
runs a workflow with an activity (what every engine test builds on)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn
class Shouting:
    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity(
            shout, text, start_to_close_timeout=timedelta(seconds=10)
        )


async def test_the_dev_server_runs_a_workflow_and_its_activity(temporal_address: str) -> None:
    client = await Client.connect(temporal_address)
    queue = f"dev-server-{uuid.uuid4().hex}"
    async with Worker(client, task_queue=queue, workflows=[Shouting], activities=[shout]):
        result = await client.execute_workflow(
            Shouting.run, "hello", id=f"shout-{uuid.uuid4().hex}", task_queue=queue
        )
    assert result == "HELLO"
