"""``agentworld worker``'s engine: a Temporal worker that runs chat workflows and drains chats.

A worker serves the deployment's task queue (``AGENTWORLD_TEMPORAL_TASK_QUEUE``: the chat
workflows and the activities of worlds without a ``workerQueue``) and any queues named with
``--queue`` (the activities of worlds whose ``workerQueue`` it is: the host that holds their
working directory). The activities ``model_call`` and ``tool_run`` do one chat's
inbox with the runtime every process uses (``WorldRuntime.drain``: the chat's lease, each step
committed in one transaction keyed by its inbox item), each under a step gate that lets through
at most one model call or one tool call (``runtime.step_gate``), heartbeating so a worker that
dies is noticed. Retried on another worker, or run after a tool call's worker died, an activity
first records the chat's tool runs that had started as interrupted and takes the chat's lease
over (SPEC S2).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta

from temporalio import activity
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from agentworld.agent_world import AgentWorld
from agentworld.errors import NotFoundError, StorageError
from agentworld.runtime.chat_workflow import (
    EXPIRE_DUE,
    MODEL_CALL,
    RUN_CHAT_WORK,
    TOOL_RUN,
    ChatRef,
    ChatWork,
    ChatWorkflow,
)
from agentworld.runtime.engine import TemporalSettings
from agentworld.runtime.recovery import interrupt_chat_runs
from agentworld.runtime.step_gate import StepGate, StepKind

logger = logging.getLogger("agentworld.worker")

HEARTBEAT_EVERY = 1.5
"""Seconds between an activity's heartbeats (well inside ``chat_workflow.HEARTBEAT_TIMEOUT``).
A stop reaches an activity with a heartbeat's answer: a model call is stopped within about this."""
TOOL_HEARTBEAT_EVERY = 0.25
"""Seconds between a tool call's heartbeats: a person's stop kills its command this soon."""


class ChatActivities:
    """The activities chat workflows run, over this worker's ``AgentWorld``."""

    def __init__(self, aw: AgentWorld, settings: TemporalSettings) -> None:
        self._aw = aw
        self._settings = settings

    @activity.defn(name=MODEL_CALL)
    async def model_call(self, ref: ChatRef) -> ChatWork:
        """Do the chat's work up to and including its next model call (routing, memory,
        hand-backs, a dead worker's call recorded interrupted; the call, its answer stored),
        and stop before the call after it."""
        return await self._work(ref, StepGate(allow="model"))

    @activity.defn(name=TOOL_RUN)
    async def tool_run(self, ref: ChatRef) -> ChatWork:
        """Handle the chat's next tool call — authorize it, then run it or ask a person — and
        go on up to the next call."""
        return await self._work(ref, StepGate(allow="tool"))

    @activity.defn(name=RUN_CHAT_WORK)
    async def run_chat_work(self, ref: ChatRef) -> ChatWork:
        """Drain the chat's inbox in one activity (workflow runs started before the step
        activities)."""
        return await self._work(ref, None)

    async def _work(self, ref: ChatRef, gate: StepGate | None) -> ChatWork:
        """Do the chat's inbox here under ``gate``; what comes next, whether work remains and
        when its next request is due."""
        try:
            runtime = await self._aw.runtime(ref.world)
            await self._aw.storage.get_chat(ref.world, ref.chat_id)
        except NotFoundError:
            return ChatWork(more=False, due_in=None, queue=ref.queue, gone=True)
        if ref.lost or activity.info().attempt > 1:
            await self._take_over(ref)
        every = TOOL_HEARTBEAT_EVERY if gate is not None and gate.allow == "tool" else HEARTBEAT_EVERY
        beating = asyncio.create_task(_heartbeat(every), name=f"heartbeat:{ref.chat_id}")
        try:
            reached: StepKind | None = await runtime.drain(ref.chat_id, gate)
        finally:
            beating.cancel()
        storage = self._aw.storage
        world = await storage.get_world(ref.world)
        queue = world.worker_queue or self._settings.task_queue
        if reached is not None:
            return ChatWork(more=True, due_in=None, queue=queue, next=reached)
        return ChatWork(
            more=await storage.inbox.has_work(ref.world, ref.chat_id),
            due_in=await runtime.expire_due(ref.chat_id, world),
            queue=queue,
        )

    async def _take_over(self, ref: ChatRef) -> None:
        """The worker of the chat's previous activity is gone (on any host): Temporal retried
        it, or it was a tool call, which is never retried. The chat's started tool runs are
        interrupted, never run again, and its lease is let go now rather than when it lapses."""
        storage = self._aw.storage
        found = await interrupt_chat_runs(storage, ref.world, ref.chat_id)
        holder = await storage.leases.holder(ref.world, ref.chat_id)
        if holder is not None:
            await storage.leases.release(ref.world, ref.chat_id, holder)
        logger.info("took over chat %s (%d tool runs interrupted)", ref.chat_id, found)

    @activity.defn(name=EXPIRE_DUE)
    async def expire_due(self, ref: ChatRef) -> None:
        """End the chat's overdue approvals and questions (the workflow's timer fired)."""
        try:
            runtime = await self._aw.runtime(ref.world)
        except NotFoundError:
            return
        await runtime.expire_due(ref.chat_id)


async def _heartbeat(every: float) -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(every)


async def connect_worker_client(settings: TemporalSettings) -> Client:
    """The worker's client; an unreachable service is one clear error naming the address."""
    try:
        return await Client.connect(settings.address, namespace=settings.namespace)
    except Exception as exc:
        raise StorageError(f"cannot reach Temporal at {settings.address}: {exc}") from exc


async def run_worker(
    db: str | None,
    settings: TemporalSettings,
    queues: Sequence[str] = (),
    *,
    stop: asyncio.Event,
    on_ready: Callable[[list[str]], None] | None = None,
) -> None:
    """Serve the deployment's queue and ``queues`` until ``stop`` is set; then the running
    activities are cancelled (their chats' leases released, their work left in the inbox for
    the workers that retry them)."""
    client = await connect_worker_client(settings)
    served = list(dict.fromkeys([settings.task_queue, *queues]))
    async with AgentWorld(db, worker=True, long_lived=True) as aw:
        activities = ChatActivities(aw, settings)
        async with contextlib.AsyncExitStack() as stack:
            for queue in served:
                worker = Worker(
                    client,
                    task_queue=queue,
                    workflows=[ChatWorkflow] if queue == settings.task_queue else [],
                    activities=[
                        activities.model_call,
                        activities.tool_run,
                        activities.run_chat_work,
                        activities.expire_due,
                    ],
                    # The workflow module imports nothing but temporalio and keeps no state
                    # of its own; the sandbox's import and proxy costs are paid on every
                    # workflow task. Determinism is checked by replaying recorded histories
                    # in the sandbox (tests/temporal/test_workflow_upgrades.py).
                    workflow_runner=UnsandboxedWorkflowRunner(),
                    # Heartbeats go to the service as often as the activity beats (a stop
                    # comes back with their answers): no coarser than a tool call's.
                    max_heartbeat_throttle_interval=timedelta(seconds=TOOL_HEARTBEAT_EVERY),
                    default_heartbeat_throttle_interval=timedelta(seconds=TOOL_HEARTBEAT_EVERY),
                    graceful_shutdown_timeout=timedelta(seconds=0),
                )
                await stack.enter_async_context(worker)
            if on_ready is not None:
                on_ready(served)
            await stop.wait()
