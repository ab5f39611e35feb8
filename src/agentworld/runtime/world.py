"""The runtime of one world: publish, route, run each chat's inbox, answer.

Every message published into a chat is stored with the work it causes (a ``route``
item in the chat's persisted inbox, ``models.work``) in one transaction; then
subscribers see it (SPEC E2) and the chat's runner is started. The runner
(``runners``) holds the chat's lease — one process at a time, across processes —
and does the inbox in order: a ``route`` item offers the message to every agent
(SPEC R1–R2) and becomes one ``turn`` per agent that answers; their answers are
published the same way, so agents hear each other. A process that stops leaves its
items in the inbox, and whoever runs the chat next finishes them.

What only tool calls need -- approvals, client calls, stopping a running tool, the policy --
is imported where it is first used (``runtime.recovery``), so that a process whose turns
call no tool does not pay for loading it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, assert_never

from agentworld.events.bus import EventBus
from agentworld.events.persistence import persist_events
from agentworld.models import Chat, Message, World, new_id
from agentworld.models.events import MessageEvent
from agentworld.models.pending import PendingApproval, PendingCall, PendingClientCall
from agentworld.models.work import (
    ChatReport,
    InboxChange,
    Loop,
    Posted,
    QueuedWork,
    Resume,
    Route,
    RunApproved,
    Turn,
)
from agentworld.process_secrets import note_key_variable
from agentworld.providers.registry import build_provider
from agentworld.routing.mentions import is_human_sender
from agentworld.routing.messages import is_routable, may_address_anyone
from agentworld.runtime.approval_timers import ApprovalTimers
from agentworld.runtime.failures import agent_failed, mcp_server_failed, work_failed
from agentworld.runtime.hooks import HookSet, OnEvent
from agentworld.runtime.memory_cache import MemoryCache
from agentworld.runtime.provider_pool import ProviderFactory, ProviderPool
from agentworld.runtime.recovery import expire_overdue, recover_interrupted
from agentworld.runtime.route_step import Routed, WorldAndAgents, single_loop, take_up
from agentworld.runtime.runners import LEASE_SECONDS, ChatRunners
from agentworld.runtime.titles import ChatTitles
from agentworld.runtime.turn import later_batch_waits, run_agent_loop, run_agent_turn
from agentworld.runtime.turn_context import PolicyOnFirstCall, Step, TurnContext
from agentworld.storage.pending import refuse_closed
from agentworld.storage.sql import SQLStorage
from agentworld.tools.registry import Tool, ToolRegistry
from agentworld.tools.world_tools import WorldTools

if TYPE_CHECKING:
    from agentworld.runtime.approvals import Decision, Scope
    from agentworld.runtime.authorizer import Authorizer
    from agentworld.runtime.stopping import StopOutcome
    from agentworld.runtime.streaming import StreamCallbacks


class WorldRuntime:
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
    ) -> None:
        self.storage = storage
        self.world = world
        self.bus = EventBus(world)
        persist_events(self.bus, storage)
        self._providers = ProviderPool(provider_factory or build_provider)
        self._tools = WorldTools(extra=tools, on_mcp_error=self._report_mcp_error)
        self._titles = ChatTitles(storage, self._providers.get, world)
        self._runners = ChatRunners(
            storage,
            world,
            self._process,
            on_error=self._report_work_error,
            on_drained=self._titles.title,
        )
        self._memory = MemoryCache(storage)
        self._hooks = HookSet(on_event)
        self._turns = TurnContext(
            storage=storage,
            memory=self._memory,
            bus=self.bus,
            provider_for=self._providers.get,
            tools_for=self._tools.registry,
            authorizer=authorizer or PolicyOnFirstCall(storage),
            publish=self.publish,
            settle=self._settle,
            kick=self._runners.kick,
            interactive=interactive,
            hooks_for=self._hooks.for_world,
            streaming=streaming,
        )
        self._timers = ApprovalTimers(storage, world, expire=self._expire)
        self._known: dict[int, WorldAndAgents] = {}
        """The world and its agents as a post that claimed its chat read them, by the item its
        route is (chats run concurrently: keyed by item)."""
        self._routed: dict[int, Routed] = {}
        """What a route just did, by the item its loop continues in: the world it read, and the
        message that loop is to take into memory (chats run concurrently: keyed by item)."""
        self.bus.subscribe(self._timers.on_approval, kinds=["approval"], name="approval-timer")

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
        """Take up what stopped processes left in this world: overdue approvals are denied,
        tool runs whose process died are logged as interrupted, and every chat with work
        in its inbox gets a runner (which gives way if a live process holds the chat).
        Returns those chats. One read says which of these there is to look at; usually none."""
        world = world or await self.storage.get_world(self.world)
        left = await self.storage.left_behind(self.world)
        if "tool_runs" in left:
            await recover_interrupted(self.storage, world)
        if "approvals" in left:
            await expire_overdue(self._turns, world)
        if "work" not in left:
            return []
        chats = await self.storage.inbox.chats_with_work(self.world)
        for chat_id in chats:
            self._runners.kick(chat_id)
        return chats

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._timers.aclose()
        await self._runners.aclose()
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
        # One transaction: the chat exists, the message is stored with its routing queued, and
        # a human resets the turn budgets; if this process claims the chat, the common route
        # (no hooks, one agent answers) is taken there too, with that agent's memory read.
        routed = is_routable(message)
        fresh = is_human_sender(sender) or sender.lower() == "world"
        plain = routed and fresh and not self._hooks.registered  # fresh: may address anyone
        posted = await self.storage.post_to_chat(
            self.world,
            message,
            reset_llm_calls=fresh,
            inbox=InboxChange(chat_id, append=(Route(message=message),)) if routed else None,
            claim_for=self._runners.owner if routed else None,  # and run it, if nobody does
            claim_ttl=LEASE_SECONDS,
            route=partial(single_loop, message) if plain else None,
            memory_after=lambda agent: self._memory.last_seq(self.world, agent, chat_id),
        )
        await self.bus.publish(MessageEvent(world=self.world, message=message))
        if posted.claimed:
            if (first := posted.first) is not None and posted.world is not None:
                self._hooks.note(posted.world[0])
                if posted.taken_up is None:
                    self._known[first.item_id] = posted.world
                else:  # routed already: its loop starts from the memory the post read
                    self._routed[first.item_id] = Routed(first, posted.world[0], taken_up=posted.taken_up)
            self._runners.start_claimed(chat_id, first)
        elif routed:
            self._runners.kick(chat_id)
        return message, posted

    async def publish(self, step: Step) -> None:
        """Store → subscribers → route (SPEC E2), the storing in one transaction: the step's
        message in the transcript (and, with ``memory_of``, in that agent's memory with its LLM
        call count), its routing queued when it is spoken, and the inbox item it ``settles``
        replaced by ``then`` (removed when ``then`` is empty)."""
        message, memory_of, llm_calls = step.message, step.memory_of, step.llm_calls
        settles, then, events, tool_log_end = step.settles, step.then, step.events, step.tool_log_end
        hooked = self._hooks.may_exist and not message.tool_calls
        routed = hooked or (is_routable(message) and may_address_anyone(message))
        # An answer that addresses nobody needs no routing, unless hooks are to see it; the
        # hooks see every message but the model's tool calls (those reach them as calls).
        change = InboxChange(
            message.chat_id,
            append=(Route(message=message),) if routed else (),
            current=settles,
            becomes=then if settles is not None else None,
        )
        # A step that ends its item and queues nothing may be the chat's last: it lets the chat
        # go in its own transaction — once the chat is titled (titling happens under the lease,
        # after the inbox is done: ``ChatRunners``' ``on_drained``); until then it reads what
        # naming the chat needs, so the title step reads nothing.
        last = settles is not None and not then and not routed
        titled = self._titles.has_title(message.chat_id)
        recorded = await self.storage.record_step_with_transcript(
            self.world,
            memory_of,
            [message] if memory_of is not None else [],
            [message],
            llm_calls=llm_calls,
            inbox=change if change.append or settles is not None else None,
            let_go=self._runners.owner if last and titled else None,
            events=events,
            tool_log_end=tool_log_end,
            look_for_title=last and not titled,
            report_after=self._runners.report_after(message.chat_id) if last else None,
        )
        if recorded.lease is not None:
            self._runners.settled(message.chat_id, recorded.lease)
        if recorded.naming is not None:
            self._titles.found(message.chat_id, recorded.naming)
        for event in events:
            await self.bus.publish(event)
        await self.bus.publish(MessageEvent(world=self.world, message=message))
        if change.adds_work:
            self._runners.kick(message.chat_id)

    async def _settle(self, change: InboxChange) -> None:
        """Commit an inbox change that has no message with it, and run what it queued."""
        await self.storage.inbox.change(self.world, change)
        if change.adds_work:
            self._runners.kick(change.chat_id)

    async def stop(self, chat_id: str, *, by: str = "human") -> StopOutcome:
        """Stop the chat's work now, on a person's word: the running turn is cancelled (its
        tool killed), unfinished calls get their "stopped" results, queued work is dropped, and
        the transcript says who stopped it (``runtime.stopping``). A chat another process runs
        is not stopped (``stopped`` is false): stop it where it runs."""
        from agentworld.runtime.stopping import stop_chat  # on first use (module docstring)

        async with self._runners.stopped(chat_id):
            return await stop_chat(
                self._turns, self.world, chat_id, by=by, owner=self._runners.owner
            )

    def want_report(self, chat_id: str, after_seq: int) -> None:
        """A command waiting on the chat reports from ``after_seq``: read it as the chat is let
        go (``ChatRunners.want_report``); ``take_report`` hands it over."""
        self._runners.want_report(chat_id, after_seq)

    def take_report(self, chat_id: str, after_seq: int) -> ChatReport | None:
        """What ``want_report`` asked for, if it is still what a read would find; else None."""
        return self._runners.take_report(chat_id, after_seq)

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
        if timeout is None:  # no timeout to keep: one wait less to set up (a thousand sends)
            return await self._runners.wait_idle(chat_id)
        async with asyncio.timeout(timeout):
            await self._runners.wait_idle(chat_id)

    async def tools(self) -> ToolRegistry:
        return await self._tools.registry(await self.storage.get_world(self.world))

    async def pending_calls(self, chat_id: str | None = None) -> list[PendingClientCall]:
        """Client-side tool calls waiting for their results (SPEC T4)."""
        return await self.storage.pending.find(self.world, chat_id=chat_id, kind="client")

    async def submit_tool_result(
        self, tool_call_id: str, result: Any, *, is_error: bool = False
    ) -> PendingCall:
        """Post the result of a client-side tool call; the agent's loop resumes once every
        waiting call of the same model response has its result.

        Refused (``NotFoundError`` / ``InvalidInputError``) for an id that is not a pending
        client call of this world, or that was already answered; nothing is stored then.
        """
        from agentworld.runtime.client_calls import submit_client_result  # (module docstring)

        return await submit_client_result(self._turns, self.world, tool_call_id, result, is_error=is_error)

    async def approvals(self, chat_id: str | None = None) -> list[PendingApproval]:
        """Pending approval requests (after expiring overdue ones, SPEC A7)."""
        world = await self.storage.get_world(self.world)
        await recover_interrupted(self.storage, world)
        await expire_overdue(self._turns, world)
        return await self.storage.pending.find(self.world, chat_id=chat_id, kind="approval")

    async def answer_approval(
        self,
        approval_id: str,
        *,
        decision: Decision,
        scope: Scope = "once",
        actor: str = "human",
    ) -> PendingCall:
        """Answer an approval request of this world; refused for unknown, foreign, answered or
        expired ids (SPEC A3). The approved call runs, and the loop resumes, in the chat's inbox."""
        pending = await self.storage.pending.get(self.world, approval_id)
        if pending is not None:
            refuse_closed(pending)  # its agent was deleted: say so, rather than "not held"
        from agentworld.runtime.approvals import answer_approval  # (module docstring)

        world = await self.storage.get_world(self.world)
        await recover_interrupted(self.storage, world)
        return await answer_approval(
            self._turns, world, approval_id, decision=decision, scope=scope, actor=actor
        )

    async def _expire(self, world: World, pending: PendingCall) -> bool:
        """Deny a request whose time ran out (``ApprovalTimers``)."""
        from agentworld.runtime.approvals import expire  # (module docstring)

        return await expire(self._turns, world, pending)

    def forget_agent(self, agent: str) -> None:
        """Drop what this process remembers of a deleted agent (its cached memory)."""
        self._memory.forget(self.world, agent)

    # -- the chat's inbox, one item at a time (under the chat's lease) -------------

    async def _process(self, queued: QueuedWork) -> QueuedWork | None:
        """Do one inbox item; return its continuation when that is to be done at once."""
        work = queued.work
        match work:
            case Route():
                known = self._known.pop(queued.item_id, None)
                routed = await take_up(
                    self._turns, self._hooks, self.world, queued, work.message, known=known
                )
                if routed.next is not None and routed.world is not None:
                    self._routed[routed.next.item_id] = routed
                return routed.next
            case Turn():
                world = self._world_for(self._routed.pop(queued.item_id, None))
                agent = await self.storage.get_agent(self.world, work.agent)
                await run_agent_turn(self._turns, await world, agent, work.message, queued.item_id)
            case Loop():
                continues = self._routed.pop(queued.item_id, None)
                await run_agent_loop(
                    self._turns,
                    await self._world_for(continues),
                    queued.chat_id,
                    work,
                    queued.item_id,
                    incoming=continues.incoming if continues is not None else None,
                    taken_up=continues.taken_up if continues is not None else None,
                )
            case Resume():
                await self._resume(queued, work)
            case RunApproved():
                from agentworld.runtime.approvals import run_approved  # (module docstring)

                world_now = await self.storage.get_world(self.world)
                registry = await self._tools.registry(world_now)
                await run_approved(self._turns, world_now, queued, work, registry)
            case _:
                assert_never(work)
        return None

    async def _world_for(self, routed: Routed | None) -> World:
        """The world's settings: those a route just read, for the item that continues it at
        once; read fresh otherwise."""
        if routed is not None and routed.world is not None:
            return routed.world
        return await self.storage.get_world(self.world)

    async def _resume(self, queued: QueuedWork, item: Resume) -> None:
        """Continue the loop once every call of the batch has its result — exactly once, and
        only when no later batch of the agent is still waiting (that one's resume goes on)."""
        done = InboxChange(queued.chat_id, current=queued.item_id, becomes=())
        if await self.storage.pending.missing_results(self.world, item.agent, item.batch_id):
            await self._settle(done)
            return
        if await later_batch_waits(self.storage, self.world, item.agent, queued.chat_id, item.batch_id):
            await self._settle(done)
            return
        loop = Loop(agent=item.agent, answer_to=item.answer_to, reply_to=item.reply_to)
        claimed = await self.storage.pending.claim_resume(
            self.world,
            item.batch_id,
            inbox=InboxChange(queued.chat_id, current=queued.item_id, becomes=(loop,)),
        )
        if not claimed:
            await self._settle(done)
            return
        world = await self.storage.get_world(self.world)
        await run_agent_loop(self._turns, world, queued.chat_id, loop, queued.item_id)

    async def _report_work_error(self, queued: QueuedWork, exc: Exception) -> None:
        """A failed turn is an agent's error (event + a line in the chat); other work, a system event."""
        work = queued.work
        match work:
            case Turn() | Loop() | Resume():
                event, line = agent_failed(self.world, queued.chat_id, work.agent, exc)
                await self.bus.publish(event)
                await self.publish(Step(line))
            case _:
                await self.bus.publish(work_failed(self.world, queued.chat_id, work, exc))

    async def _report_mcp_error(self, server: str, exc: Exception) -> None:
        await self.bus.publish(mcp_server_failed(self.world, server, exc))
