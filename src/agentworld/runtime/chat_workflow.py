"""A chat's work as a Temporal workflow (SPEC S1): one workflow per chat runs its inbox.

The workflow decides when to work and what kind of activity does the next step:
``model_call`` (the chat's work up to and including its next model call: routing, memory,
hand-backs, then the call and its stored answer) or ``tool_run`` (one tool call: authorized,
then run or asked about). Each activity does the chat's persisted inbox in a worker as every
process does, each step committed in its own transaction, and stops before a call it is not
for (``runtime.step_gate``), saying which kind comes next. A model call is retried on another
worker when its worker dies; a tool call never is (SPEC S2): the next activity records it
interrupted and the model decides. With no work left the workflow sleeps until it is woken (``wake``: a
message, an answer, an edit queued work), held (``hold``: a person stops or cuts the chat) or
the chat's earliest pending approval or question is due — a durable timer, so a timeout fires
while only workers run; then the activity ``expire_due`` ends what is overdue and the workflow
goes round. After a long idle with nothing pending the run ends; the next ``wake`` starts a new
one. Runs started before the step activities (patch ``step-activities``) drain the inbox with
the one activity ``run_chat_work``.

This module is workflow code: deterministic, importing nothing of ours (the activities are
named, their arguments plain dataclasses), so Temporal's sandbox loads it as it is; workers run
it unsandboxed, and the suite replays recorded histories in the sandbox. A change to what it
decides must keep old histories replaying: guard it with ``workflow.patched`` (ARCHITECTURE.md,
"Running on Temporal").
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

RUN_CHAT_WORK = "run_chat_work"
"""The whole drain in one activity (runs started before ``STEP_ACTIVITIES``)."""
MODEL_CALL = "model_call"
TOOL_RUN = "tool_run"
EXPIRE_DUE = "expire_due"
STEP_ACTIVITIES = "step-activities"
"""The patch that split the drain into ``model_call`` and ``tool_run`` activities."""

HEARTBEAT_TIMEOUT = timedelta(seconds=10)
"""A worker that stops heartbeating for this long is taken for dead: the activity is retried
on another worker (SIGKILL, a lost host)."""
IDLE_END = 600.0
"""Seconds a run waits with no work and nothing pending before it ends."""
HOLD_WAIT = 30.0
"""Longest a ``hold`` waits for the running activity to end (its tool killed, lease released)."""
HISTORY_LIMIT = 2000
"""Events after which an idle run continues as new (a long-lived chat's history stays short)."""

_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_interval=timedelta(seconds=10)
)
_NEVER_AGAIN = RetryPolicy(maximum_attempts=1)
"""A tool call whose worker died is not run again (SPEC S2)."""


@dataclass
class ChatRef:
    """Which chat, and the task queue its activities run on (the world's ``workerQueue``)."""

    world: str
    chat_id: str
    queue: str
    lost: bool = False
    """The previous activity's worker died mid-call: its started tool runs are interrupted."""


@dataclass
class ChatWork:
    """What a drain left: whether work remains, seconds until the chat's earliest pending
    approval or question is due (None: nothing pending), the queue for the next activity."""

    more: bool
    due_in: float | None
    queue: str
    gone: bool = False
    """The world or chat no longer exists: the run ends."""
    next: str | None = None
    """``model`` or ``tool``: the work stopped before a call of that kind, for the next
    activity; None: the inbox was done (``more`` says whether work came meanwhile)."""


@dataclass
class _Holds:
    tokens: set[str] = field(default_factory=set)


@workflow.defn(name="AgentWorldChat")
class ChatWorkflow:
    """One chat's runner; its id is ``engine.workflow_id(world, chat)``."""

    def __init__(self) -> None:
        self._woken = False
        self._holds = _Holds()
        self._activity: workflow.ActivityHandle[ChatWork] | None = None
        self._lapsing: set[asyncio.Task[None]] = set()

    @workflow.run
    async def run(self, ref: ChatRef) -> None:
        queue = ref.queue
        while True:
            await workflow.wait_condition(lambda: not self._holds.tokens)
            self._woken = False
            if workflow.patched(STEP_ACTIVITIES):
                work = await self._steps(ChatRef(ref.world, ref.chat_id, queue))
            else:
                work = await self._drain(ChatRef(ref.world, ref.chat_id, queue))
            if work is None:
                continue  # cancelled by a hold: wait for its release
            if work.gone:
                return
            queue = work.queue
            if work.more or self._woken or self._holds.tokens:
                continue
            if workflow.info().get_current_history_length() > HISTORY_LIMIT:
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(ChatRef(ref.world, ref.chat_id, queue))
            timeout = IDLE_END if work.due_in is None else max(work.due_in, 0.0) + 0.5
            try:
                await workflow.wait_condition(lambda: self._woken or bool(self._holds.tokens), timeout=timeout)
            except TimeoutError:
                if work.due_in is None:
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    return
                await workflow.execute_activity(
                    EXPIRE_DUE,
                    ChatRef(ref.world, ref.chat_id, queue),
                    task_queue=queue,
                    start_to_close_timeout=timedelta(minutes=1),
                    retry_policy=_RETRY,
                )

    async def _steps(self, ref: ChatRef) -> ChatWork | None:
        """Run the chat's work as activities, one model call or tool call each, until none
        is next; None when a hold cancelled them."""
        kind = MODEL_CALL  # what a wake usually leads to; an activity stops at once if not
        while True:
            if self._holds.tokens:
                return None
            try:
                work = await self._run_activity(kind, ref, _NEVER_AGAIN if kind == TOOL_RUN else _RETRY)
            except ActivityError:
                if self._holds.tokens:
                    return None
                if kind != TOOL_RUN:
                    raise
                # The tool call's worker died (or stopped answering): the call is recorded
                # interrupted, never run again, and the model decides (SPEC S2).
                kind, ref = MODEL_CALL, ChatRef(ref.world, ref.chat_id, ref.queue, lost=True)
                continue
            if work.gone or work.next is None:
                return work
            kind = MODEL_CALL if work.next == "model" else TOOL_RUN
            ref = ChatRef(ref.world, ref.chat_id, work.queue)

    async def _drain(self, ref: ChatRef) -> ChatWork | None:
        """Run ``run_chat_work`` once (retried on another worker when its worker dies); None
        when a hold cancelled it."""
        try:
            return await self._run_activity(RUN_CHAT_WORK, ref, _RETRY)
        except ActivityError:
            if self._holds.tokens:
                return None
            raise

    async def _run_activity(self, name: str, ref: ChatRef, retry: RetryPolicy) -> ChatWork:
        """Run one activity of the chat, cancellable by a hold."""
        self._activity = workflow.start_activity(
            name,
            ref,
            result_type=ChatWork,
            task_queue=ref.queue,
            start_to_close_timeout=timedelta(days=1),
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=retry,
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        try:
            return await self._activity
        finally:
            self._activity = None

    @workflow.signal
    def wake(self) -> None:
        """Work was queued for the chat (or may have been): drain it."""
        self._woken = True

    @workflow.update
    async def hold(self, token: str, seconds: float) -> None:
        """Cancel the running activity, wait until it has ended, and start none until ``release``
        with the same token — or until ``seconds`` pass, so a caller that died cannot keep the
        chat stopped."""
        self._holds.tokens.add(token)
        if self._activity is not None:
            self._activity.cancel()
        with contextlib.suppress(asyncio.TimeoutError):
            await workflow.wait_condition(lambda: self._activity is None, timeout=HOLD_WAIT)
        self._lapsing.add(asyncio.create_task(self._lapse(token, seconds)))

    async def _lapse(self, token: str, seconds: float) -> None:
        await workflow.sleep(seconds)
        self._holds.tokens.discard(token)
        self._lapsing = {t for t in self._lapsing if not t.done()}

    @workflow.signal
    def release(self, token: str) -> None:
        """The holder is done: drain again (work it queued, an edit's new message)."""
        self._holds.tokens.discard(token)
        self._woken = True
