"""The runtime of one world: publish, route, run each chat's inbox, answer.

Every message published into a chat is stored with the work it causes (a ``route``
item in the chat's persisted inbox, ``models.work``) in one transaction; then
subscribers see it (SPEC E2) and the chat's runner is started. The runner
(``runners``) holds the chat's lease — one process at a time, across processes —
and does the inbox in order: each item is done by steps that return what they did
(``StepResult``), and ``apply`` commits each in one transaction, then publishes it. A
``route`` item offers the message to every agent (SPEC R1–R2) and becomes one ``loop`` per
agent that answers; their answers are published the same way, so agents hear each other. A
process that stops leaves its items in the inbox, and whoever runs the chat next finishes
them.

What only tool calls need -- approvals, client calls, stopping a running tool, the policy --
is imported where it is first used (``runtime.recovery``), so that a process whose turns
call no tool does not pay for loading it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, assert_never

from agentworld import tracing
from agentworld.events.bus import EventBus
from agentworld.events.persistence import persist_events
from agentworld.models import Chat, Message, World, new_id
from agentworld.models.events import MessageEvent, SSEEvent
from agentworld.models.work import (
    InboxChange,
    Loop,
    Posted,
    QueuedWork,
    Resume,
    Route,
    RunApproved,
    StepResult,
    Turn,
)
from agentworld.process_secrets import note_key_variable
from agentworld.providers.registry import build_provider
from agentworld.routing.messages import is_routable, may_address_anyone
from agentworld.runtime.approval_timers import ApprovalTimers
from agentworld.runtime.failures import agent_failed, mcp_server_failed, work_failed
from agentworld.runtime.hooks import HookSet, OnEvent
from agentworld.runtime.memory_cache import MemoryCache
from agentworld.runtime.policy_files import kept_from_tools
from agentworld.runtime.provider_pool import ProviderFactory, ProviderPool
from agentworld.runtime.recovery import expire_overdue, recover_interrupted
from agentworld.runtime.route_step import route
from agentworld.runtime.runners import LEASE_SECONDS, ChatRunners
from agentworld.runtime.step_gate import StepGate, StepKind, StepReached
from agentworld.runtime.titles import ChatTitles
from agentworld.runtime.trace_steps import posting, traced
from agentworld.runtime.turn import later_batch_waits, run_agent_loop, run_agent_turn
from agentworld.runtime.turn_context import (
    UNATTENDED,
    PolicyOnFirstCall,
    Steps,
    TurnContext,
    unattended_step,
)
from agentworld.runtime.waiting_calls import WaitingCalls
from agentworld.storage.sql import SQLStorage
from agentworld.tools.registry import Tool, ToolRegistry
from agentworld.tools.world_tools import WorldTools

if TYPE_CHECKING:
    from agentworld.events.live_relay import LiveRelay
    from agentworld.runtime.authorizer import Authorizer
    from agentworld.runtime.cutting import CutOutcome
    from agentworld.runtime.engine import TemporalSettings
    from agentworld.runtime.stopping import StopOutcome
    from agentworld.runtime.streaming import StreamCallbacks
    from agentworld.runtime.temporal_runners import TemporalRunners


class WorldRuntime(WaitingCalls):
    """Runs one world until closed. Use as an async context manager."""

    def __init__(
        self,
        storage: SQLStorage,
        world: str,
        *,
        provider_factory: ProviderFactory | None = None,
        tools: Sequence[Tool] = (),
        authorizer: Authorizer | None = None,
        interactive: bool = True,
        on_event: Sequence[OnEvent] = (),
        streaming: StreamCallbacks | None = None,
        temporal: TemporalSettings | None = None,
        worker: bool = False,
    ) -> None:
        """``temporal``: chats run on Temporal workers (``runtime.engine``), not here;
        ``worker``: this is such a worker — a chat runs here only while its workflow asks."""
        self.storage = storage
        self.world = world
        self.bus = EventBus(world)
        persist_events(self.bus, storage)
        self._providers = ProviderPool(provider_factory or build_provider)
        self._tools = WorldTools(
            extra=tools, on_mcp_error=self._report_mcp_error, kept=kept_from_tools(storage.url)
        )
        self._titles = ChatTitles(storage, self._providers.get, world)
        self._runners: ChatRunners | TemporalRunners
        if temporal is not None and not worker:
            from agentworld.runtime.temporal_runners import TemporalRunners  # only in this mode

            self._runners = TemporalRunners(storage, world, temporal)
        else:
            self._runners = ChatRunners(
                storage,
                world,
                self._process,
                on_error=self._report_work_error,
                on_drained=self._titles.title,
                serve_only=worker,
            )
        self._relay: LiveRelay | None = None
        if storage.url.startswith("postgresql") and not (temporal is not None and not worker):
            # Chunks cross to other processes' streams (``events.live_relay``); not on SQLite.
            from agentworld.events.live_relay import LiveRelay

            self._relay = LiveRelay(storage, world)
            self.bus.subscribe(self._relay.on_event, kinds=["sse"], name="live-relay")
        self._memory = MemoryCache(storage)
        self._hooks = HookSet(on_event)
        self._turns = TurnContext(
            storage=storage,
            memory=self._memory,
            bus=self.bus,
            provider_for=self._providers.get,
            tools_for=self._tools.registry,
            authorizer=authorizer or PolicyOnFirstCall(storage),
            interactive=interactive,
            hooks_for=self._hooks.for_world,
            streaming=streaming,
        )
        self._timers = ApprovalTimers(storage, world, expire=self._expire)
        if not worker:  # a worker's chats time out by their workflows' durable timers
            self.bus.subscribe(self._timers.on_approval, kinds=["approval", "question"], name="approval-timer")

    def on_event(self, hook: OnEvent) -> OnEvent:
        """Register an ``on_event(event, respond)`` hook (SPEC E3); usable as a decorator."""
        return self._hooks.register(hook)

    async def __aenter__(self) -> WorldRuntime:
        # Fails early on an unknown world.
        world, agents = await self.storage.world_and_agents(self.world)
        self._hooks.note(world)
        for agent in agents:
            # An approved call may run here before any turn builds the agent's provider.
            note_key_variable(agent.api_key_env)
        await self.resume_stopped_work(world)
        return self

    async def resume_stopped_work(self, world: World | None = None) -> list[str]:
        """Resume what stopped processes left in this world: overdue approvals are denied,
        tool runs whose process died are logged as interrupted, and every chat with work
        in its inbox gets a runner (which gives way if a live process holds the chat).
        Returns those chats. One read says which of these there is to look at; usually none."""
        world = world or await self.storage.get_world(self.world)
        left = await self.storage.left_behind(self.world)
        if "tool_runs" in left:
            await recover_interrupted(self.storage, world)
        if "approvals" in left:
            await expire_overdue(self.storage, world, self._expire)
        if "work" not in left:
            return []
        chats = await self.storage.inbox.chats_with_work(self.world)
        for chat_id in chats:
            self._runners.start(chat_id)
        return chats

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._timers.aclose()
        await self._runners.aclose()
        if self._relay is not None:
            await self._relay.aclose()
        await self._tools.aclose()
        await self._providers.aclose()

    # -- the public surface ---------------------------------------------------

    async def new_chat(self, *, name: str = "New chat") -> Chat:
        return await self.storage.create_chat(
            Chat(world=self.world, chat_id=new_id("chat_"), name=name)
        )

    async def send(self, chat_id: str, content: str, *, sender: str = "human") -> Message:
        """Publish a message from a person (or ``world``) into a chat; agents answer in the background."""
        message, _posted = await self.post(chat_id, content, sender=sender)
        return message

    async def post(self, chat_id: str, content: str, *, sender: str = "human") -> tuple[Message, Posted]:
        """``send``, and what the post did (``Posted``: where the transcript stood before it)."""
        message = Message(chat_id=chat_id, role="user", sender=sender, content=content)
        # One transaction: the chat exists, the message is stored with its route queued (a
        # person's message resets the turn budgets), and the chat is claimed if nobody runs it.
        routed = is_routable(message)
        # The trace of the work a person's message causes starts here (a short span, sent
        # even if this process stops before the work is done); its route carries the context.
        claims = routed and self._runners.runs_here
        with tracing.span("post_message", posting(self.world, message)):
            route_item = Route(
                message=message,
                traceparent=tracing.traceparent(),
                unattended=not self._turns.interactive,
            )
            posted = await self.storage.post_to_chat(
                self.world,
                message,
                inbox=InboxChange(chat_id, append=(route_item,)) if routed else None,
                claim_for=self._runners.owner if claims else None,
                claim_ttl=LEASE_SECONDS,
            )
            await self.bus.publish(MessageEvent(world=self.world, message=message))
        if posted.claimed:
            self._runners.start_claimed(chat_id, posted.first)
        elif routed:
            self._runners.start(chat_id)
        return message, posted

    async def apply(self, step: StepResult) -> StepResult:
        """Commit ``step`` in one transaction — with the route of each message it says that
        speaks to someone queued in its chat's inbox — then publish its events and messages
        (SPEC E2: store → subscribers → route) and start the runner of its chat if it got work.
        Returns the step as committed (with its routes, and when traces are sent the trace
        context on the work it queues)."""
        routes = tuple(Route(message=m) for m in step.said if self._needs_route(m))
        if routes:
            inbox = step.inbox or InboxChange(step.chat_id)
            step = replace(step, inbox=replace(inbox, append=inbox.append + routes))
        if tracing.enabled():
            step = traced(step)
        step = unattended_step(step)
        if self._relay is not None and any(isinstance(e, SSEEvent) and e.phase != "chunk" for e in step.events):
            await self._relay.flush()  # an answer's relayed chunks go out before its end is stored
        await self.storage.commit_step(self.world, step)
        await self._publish(step)
        return step

    async def _publish(self, step: StepResult) -> None:
        """What subscribers see of a committed step, and its chat's runner started for the work
        it queued."""
        for event in step.events:
            await self.bus.publish(event)
        for message in step.said:
            await self.bus.publish(MessageEvent(world=self.world, message=message))
        for event in step.announced:
            await self.bus.publish(event)
        if step.inbox is not None and step.inbox.adds_work:
            self._runners.start(step.chat_id)

    def _needs_route(self, message: Message) -> bool:
        """Whether a message said in a chat is offered to its agents (a ``route`` item): when
        it speaks to someone, or when hooks may see it — every message but a model's tool
        calls, which reach them as calls."""
        if self._hooks.may_exist and not message.tool_calls:
            return True
        return is_routable(message) and may_address_anyone(message)

    async def stop(self, chat_id: str, *, by: str = "human") -> StopOutcome:
        """Stop the chat's work now, on a person's word: the running turn is cancelled (its
        tool killed), unfinished calls get their "stopped" results, queued work is dropped, and
        the transcript says who stopped it (``runtime.stopping``). A chat another process runs
        is not stopped (``stopped`` is false): stop it where it runs."""
        from agentworld.runtime.stopping import StopOutcome, stop_chat  # (module docstring)

        async with self._runners.stopped(chat_id) as held:
            if not held:
                return StopOutcome(stopped=False)
            return await stop_chat(self._turns, self.world, chat_id, by=by)

    async def cut(
        self,
        chat_id: str,
        message_id: str,
        *,
        text: str | None = None,
        sender: str | None = None,
        actor: str = "human",
    ) -> CutOutcome:
        """Remove a message of the chat and everything after it, and with ``text`` put a new
        message from the same person in its place (SPEC K2; ``runtime.cutting``)."""
        from agentworld.runtime.cutting import cut_chat  # (module docstring)

        return await cut_chat(
            self._turns, self._runners, self.world, chat_id, message_id, text=text, sender=sender, actor=actor
        )

    async def drain(self, chat_id: str, gate: StepGate | None = None) -> StepKind | None:
        """In a Temporal worker: do the chat's inbox here until it is empty, or — under
        ``gate`` — until a model or tool call the gate stops; returns that call's kind
        (``ChatRunners.drain``)."""
        assert isinstance(self._runners, ChatRunners)
        return await self._runners.drain(chat_id, gate)

    @property
    def runs_chats_here(self) -> bool:
        """Whether this process does its chats' work (False on Temporal: workers do)."""
        return self._runners.runs_here

    def is_idle(self, chat_id: str | None = None) -> bool:
        """Whether this process is running nothing for the chat (or for any chat)."""
        return not self._runners.is_running(chat_id)

    async def wait_until_idle(
        self, chat_id: str | None = None, *, timeout: float | None = None
    ) -> None:
        """Wait until the chat's inbox is empty, whichever process runs it — or, without a
        chat, until this process runs no chat.

        Pending approvals are not work: a chat waiting for a person is idle.
        Raises ``TimeoutError`` after ``timeout`` seconds; the work carries on.
        """
        if timeout is None:  # no timeout to keep: one wait less to set up per waiter
            return await self._runners.wait_idle(chat_id)
        async with asyncio.timeout(timeout):
            await self._runners.wait_idle(chat_id)

    async def tools(self) -> ToolRegistry:
        return await self._tools.registry(await self.storage.get_world(self.world))

    def forget_agent(self, agent: str) -> None:
        """Drop what this process remembers of a deleted agent (its cached memory)."""
        self._memory.forget(self.world, agent)

    # -- the chat's inbox, one item at a time (under the chat's lease) -------------

    async def _process(self, queued: QueuedWork) -> QueuedWork | None:
        """Do one inbox item, applying each step it takes; return what now stands in its place
        when a step put its continuation there (to be done at once, without a read)."""
        after: QueuedWork | None = None
        reached: StepReached | None = None
        unattended = UNATTENDED.set(queued.work.unattended)
        try:
            with tracing.work_span(queued.work, queued.chat_id):
                try:
                    async with aclosing(self._steps(queued)) as steps:
                        async for step in steps:
                            step = await self.apply(step)
                            change = step.inbox
                            if change is not None and change.current == queued.item_id and change.becomes is not None:
                                after = QueuedWork(queued.item_id, queued.chat_id, change.becomes[0]) if change.becomes else None
                except StepReached as stopped:
                    reached = stopped  # the work goes on in the next activity: not an error of its span
        finally:
            UNATTENDED.reset(unattended)
        if reached is not None:
            raise reached
        return after

    async def _steps(self, queued: QueuedWork) -> Steps:
        """The steps that do one inbox item."""
        work = queued.work
        match work:
            case Route():
                steps = route(self._turns, self._hooks, self.world, queued, work.message)
            case Turn():
                world, agent = await self.storage.get_world(self.world), await self.storage.get_agent(self.world, work.agent)
                steps = run_agent_turn(self._turns, world, agent, work.message, queued.item_id)
            case Loop():
                world = await self.storage.get_world(self.world)
                steps = run_agent_loop(self._turns, world, queued.chat_id, work, queued.item_id)
            case Resume():
                steps = self._resume(queued, work)
            case RunApproved():
                from agentworld.runtime.approvals import run_approved  # (module docstring)

                world = await self.storage.get_world(self.world)
                registry = await self._tools.registry(world)
                yield await run_approved(self._turns, world, queued, work, registry)
                return
            case _:
                assert_never(work)
        async with aclosing(steps):
            async for step in steps:
                yield step

    async def _resume(self, queued: QueuedWork, item: Resume) -> Steps:
        """Continue the loop once every call of the batch has its result — exactly once, and
        only when no later batch of the agent is still waiting (that one's resume goes on)."""
        done = StepResult(queued.chat_id, inbox=InboxChange(queued.chat_id, current=queued.item_id, becomes=()))
        if await self.storage.pending.missing_results(self.world, item.agent, item.batch_id):
            yield done
            return
        if await later_batch_waits(self.storage, self.world, item.agent, queued.chat_id, item.batch_id):
            yield done
            return
        loop = Loop(agent=item.agent, answer_to=item.answer_to, reply_to=item.reply_to, traceparent=item.traceparent, unattended=item.unattended)
        claimed = await self.storage.pending.claim_resume(
            self.world,
            item.batch_id,
            inbox=InboxChange(queued.chat_id, current=queued.item_id, becomes=(loop,)),
        )
        if not claimed:
            yield done
            return
        world = await self.storage.get_world(self.world)
        steps = run_agent_loop(self._turns, world, queued.chat_id, loop, queued.item_id)
        async with aclosing(steps):
            async for step in steps:
                yield step

    async def _report_work_error(self, queued: QueuedWork, exc: Exception) -> None:
        """A failed turn is an agent's error (event + a line in the chat); other work, a system event."""
        work = queued.work
        match work:
            case Turn() | Loop() | Resume():
                event, line = agent_failed(self.world, queued.chat_id, work.agent, exc)
                await self.bus.publish(event)
                await self.apply(StepResult.spoken(line))
            case _:
                await self.bus.publish(work_failed(self.world, queued.chat_id, work, exc))

    async def _report_mcp_error(self, server: str, exc: Exception) -> None:
        await self.bus.publish(mcp_server_failed(self.world, server, exc))

