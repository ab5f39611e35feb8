"""The runtime of one world: publish, route, queue, answer.

Every message published into a chat goes through ``publish``: the event bus
persists it and lets subscribers see it (SPEC E2), then the message is put on
its chat's queue. The queue worker offers it to every agent of the world
(SPEC R1–R2) and runs the turn of each agent that should answer; their
answers are published the same way, so agents hear each other.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

from agentworld.errors import NotFoundError
from agentworld.events.bus import EventBus
from agentworld.events.persistence import persist_events
from agentworld.models import Chat, Message, World, new_id
from agentworld.models.events import ApprovalEvent, MessageEvent, WorldEvent
from agentworld.models.pending import PendingApproval, PendingCall, PendingClientCall
from agentworld.providers.base import LLMProvider
from agentworld.providers.registry import build_provider
from agentworld.routing.mentions import is_human_sender, should_agent_respond
from agentworld.routing.messages import is_routable, may_address_anyone
from agentworld.runtime.approvals import (
    Decision,
    Scope,
    answer_approval,
    expire,
    expire_overdue,
    recover_interrupted,
    run_approved,
)
from agentworld.runtime.authorizer import Authorizer, PolicyAuthorizer
from agentworld.runtime.failures import agent_failed, mcp_server_failed, work_failed
from agentworld.runtime.hooks import OnEvent, dispatch, load_hook
from agentworld.runtime.memory_cache import MemoryCache
from agentworld.runtime.provider_pool import ProviderFactory, ProviderPool
from agentworld.runtime.queues import ChatQueues
from agentworld.runtime.streaming import StreamCallbacks
from agentworld.runtime.titles import first_exchange, generate_title
from agentworld.runtime.turn import publish_responses, run_agent_loop, run_agent_turn
from agentworld.runtime.turn_context import TurnContext
from agentworld.runtime.work import Resume, RunApproved, WorkItem
from agentworld.storage.pending import refuse_closed
from agentworld.storage.sql import SQLStorage
from agentworld.tools.registry import Tool, ToolRegistry
from agentworld.tools.world_tools import WorldTools

logger = logging.getLogger("agentworld.runtime")

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
        self._queues: ChatQueues[WorkItem] = ChatQueues(
            self._process, on_error=self._report_routing_error, on_drained=self._title_chat
        )
        self._memory = MemoryCache(storage)
        self._turns = TurnContext(
            storage=storage,
            memory=self._memory,
            bus=self.bus,
            provider_for=self._providers.get,
            tools_for=self._tools.registry,
            authorizer=authorizer or PolicyAuthorizer(storage),
            publish=self.publish,
            enqueue=self._queues.put,
            interactive=interactive,
            hooks_for=self._hooks_for,
            streaming=streaming,
        )
        self._hooks: list[OnEvent] = list(on_event)
        self._loaded_hooks: dict[str, OnEvent] = {}
        self._world_has_hooks = False
        """Whether the world's settings name hooks; refreshed whenever the world is read."""
        self._timers: set[asyncio.Task[None]] = set()
        self._titled: set[str] = set()
        """Chats known to have their title already (titles are given once, never taken back)."""
        self.bus.subscribe(self._schedule_expiry, kinds=["approval"], name="approval-timer")

    def on_event(self, hook: OnEvent) -> OnEvent:
        """Register an ``on_event(event, respond)`` hook (SPEC E3); usable as a decorator."""
        self._hooks.append(hook)
        return hook

    def _hooks_for(self, world: World) -> list[OnEvent]:
        """Hooks registered in Python, then those the world names by import path."""
        named = []
        for spec in world.hooks:
            if spec not in self._loaded_hooks:
                self._loaded_hooks[spec] = load_hook(spec)
            named.append(self._loaded_hooks[spec])
        return [*self._hooks, *named]

    async def __aenter__(self) -> WorldRuntime:
        world = await self.storage.get_world(self.world)  # fail early on an unknown world
        self._world_has_hooks = bool(world.hooks)
        await recover_interrupted(self._turns, world)
        await expire_overdue(self._turns, world)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for timer in self._timers:
            timer.cancel()
        await asyncio.gather(*self._timers, return_exceptions=True)
        await self._queues.aclose()
        await self._tools.aclose()
        await self._providers.aclose()

    # -- the public surface ---------------------------------------------------

    async def new_chat(self, *, name: str = "New chat") -> Chat:
        return await self.storage.create_chat(
            Chat(world=self.world, chat_id=new_id("chat_"), name=name)
        )

    async def send(self, chat_id: str, content: str, *, sender: str = "human") -> Message:
        """Publish a message from a person (or ``world``) into a chat; agents answer in the background."""
        message = Message(chat_id=chat_id, role="user", sender=sender, content=content)
        # One transaction: the chat exists, the message is stored, a human resets turn budgets.
        await self.storage.post_to_chat(
            self.world,
            message,
            reset_llm_calls=is_human_sender(sender) or sender.lower() == "world",
        )
        await self._announce(message, persisted=True)
        return message

    async def publish(
        self, message: Message, *, memory_of: str | None = None, llm_calls: int = 0
    ) -> None:
        """Persist → subscribers → route (SPEC E2). The message is stored before anyone acts on it;
        with ``memory_of`` it also joins that agent's memory, in the same transaction."""
        if memory_of is not None:
            await self.storage.record_step_with_transcript(
                self.world, memory_of, [message], [message], llm_calls=llm_calls
            )
        await self._announce(message, persisted=memory_of is not None)

    async def _announce(self, message: Message, *, persisted: bool) -> None:
        """Subscribers see the (stored) message, then it joins its chat's queue (SPEC E2)."""
        await self.bus.publish(MessageEvent(world=self.world, message=message, persisted=persisted))
        if is_routable(message):
            self._queues.put(message.chat_id, message)

    def is_idle(self, chat_id: str | None = None) -> bool:
        return self._queues.is_idle(chat_id)

    async def wait_until_idle(
        self, chat_id: str | None = None, *, timeout: float | None = None
    ) -> None:
        """Wait until the chat (or every chat) has nothing queued or in flight.

        Pending approvals do not count as work: a chat waiting for a person is idle.
        Raises ``TimeoutError`` after ``timeout`` seconds; the work carries on.
        """
        async with asyncio.timeout(timeout):
            await self._queues.wait_idle(chat_id)

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
        pending = await self.storage.pending.get(self.world, tool_call_id)
        if pending is None or pending.kind != "client":
            raise NotFoundError(f"no pending tool call {tool_call_id!r} in world {self.world!r}")
        content = (
            json.dumps({"error": str(result)})
            if is_error
            else (result if isinstance(result, str) else json.dumps(result, default=str))
        )
        message = Message.tool_result(
            chat_id=pending.chat_id,
            agent=pending.agent,
            tool_call_id=tool_call_id,
            content=content,
            batch_id=pending.batch_id,
        )
        answered = await self.storage.pending.answer(
            self.world,
            tool_call_id,
            kind="client",
            answer={"result": content, "isError": is_error},
            results=[message],
        )
        await self.publish(message)
        self._queues.put(pending.chat_id, Resume.of(pending))
        return answered.call

    async def approvals(self, chat_id: str | None = None) -> list[PendingApproval]:
        """Pending approval requests (after expiring overdue ones, SPEC A7)."""
        world = await self.storage.get_world(self.world)
        await recover_interrupted(self._turns, world)
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
        expired ids (SPEC A3). The approved call runs, and the loop resumes, on the chat's queue."""
        pending = await self.storage.pending.get(self.world, approval_id)
        if pending is not None:
            refuse_closed(pending)  # its agent was deleted: say so, rather than "not held"
        world = await self.storage.get_world(self.world)
        await recover_interrupted(self._turns, world)
        return await answer_approval(
            self._turns, world, approval_id, decision=decision, scope=scope, actor=actor
        )

    def forget_agent(self, agent: str) -> None:
        """Drop what this process remembers of a deleted agent (its cached memory)."""
        self._memory.forget(self.world, agent)

    async def _schedule_expiry(self, event: WorldEvent) -> None:
        """While this process runs, a request times out on time, not only when next looked at."""
        if not isinstance(event, ApprovalEvent) or event.phase != "requested":
            return
        world = await self.storage.get_world(self.world)

        async def expire_later() -> None:
            await asyncio.sleep(world.approval_timeout)
            pending = await self.storage.pending.get(self.world, event.approval_id)
            if pending is not None and pending.status == "pending":
                await expire(self._turns, await self.storage.get_world(self.world), pending)

        timer = asyncio.create_task(expire_later(), name=f"expire:{event.approval_id}")
        self._timers.add(timer)
        timer.add_done_callback(self._timer_done)

    def _timer_done(self, timer: asyncio.Task[None]) -> None:
        self._timers.discard(timer)
        if not timer.cancelled() and timer.exception() is not None:
            logger.error("approval timer failed", exc_info=timer.exception())

    # -- queue workers ----------------------------------------------------------

    async def _process(self, chat_id: str, item: WorkItem) -> None:
        match item:
            case Message():
                await self._hook_then_route(chat_id, item)
            case Resume():
                await self._resume(item)
            case RunApproved():
                world = await self.storage.get_world(self.world)
                registry = await self._tools.registry(world)
                await run_approved(self._turns, world, item, registry.get(item.call.tool_name))

    async def _resume(self, item: Resume) -> None:
        """Continue the loop once every call of the batch has its result — exactly once."""
        if await self.storage.pending.missing_results(self.world, item.agent, item.batch_id):
            return
        if not await self.storage.pending.claim_resume(self.world, item.batch_id):
            return
        world = await self.storage.get_world(self.world)
        try:
            await run_agent_loop(
                self._turns,
                world,
                item.agent,
                item.chat_id,
                answer_to=item.trigger_sender,
                reply_to=item.reply_to,
            )
        except Exception as exc:
            await self._report_agent_error(item.chat_id, item.agent, exc)

    async def _hook_then_route(self, chat_id: str, message: Message) -> None:
        """Persisted already; now the hooks (SPEC E2), then the default step or their responses."""
        world = (
            await self.storage.get_world(self.world)
            if self._hooks or self._world_has_hooks
            else None
        )
        if world is not None:
            self._world_has_hooks = bool(world.hooks)
        hooks = self._hooks_for(world) if world is not None else []
        if not hooks:
            await self._route(chat_id, message)
            return
        assert world is not None
        dispatched = await dispatch(
            hooks,
            MessageEvent(world=self.world, message=message),
            default_sender=message.agent_id or "hook",
            bus=self.bus,
        )
        if dispatched.responded:
            await publish_responses(
                self._turns, world, None, chat_id, dispatched.responses, reply_to=message.message_id
            )
            return
        final = dispatched.event.message if isinstance(dispatched.event, MessageEvent) else message
        if final.content != message.content:
            # The hook rewrote the message: the stored transcript entry becomes what is processed.
            final = final.model_copy(update={"message_id": message.message_id, "chat_id": chat_id})
            await self.storage.replace_content(self.world, message.message_id, final.content or "")
            self._memory.forget(self.world)
        await self._route(chat_id, final)

    async def _route(self, chat_id: str, message: Message) -> None:
        sender = message.sender
        if not may_address_anyone(message):
            return  # decided without touching storage: the common case for agent answers
        world, agents = await self.storage.world_and_agents(self.world)
        self._world_has_hooks = bool(world.hooks)
        if (is_human_sender(sender) or sender.lower() == "world") and any(
            a.llm_call_count for a in agents
        ):
            await self.storage.reset_llm_calls(self.world)
            agents = [a.model_copy(update={"llm_call_count": 0}) for a in agents]
        for agent in agents:
            if agent.status != "active" or not should_agent_respond(
                agent.name,
                sender=sender,
                content=message.content or "",
                main_agent=world.main_agent,
            ):
                continue
            try:
                await run_agent_turn(self._turns, world, agent, message)
            except Exception as exc:
                await self._report_agent_error(chat_id, agent.name, exc)

    async def _report_agent_error(self, chat_id: str, agent: str, exc: Exception) -> None:
        event, line = agent_failed(self.world, chat_id, agent, exc)
        await self.bus.publish(event)
        await self.publish(line)

    async def _report_routing_error(self, chat_id: str, item: WorkItem, exc: Exception) -> None:
        await self.bus.publish(work_failed(self.world, chat_id, item, exc))

    async def _report_mcp_error(self, server: str, exc: Exception) -> None:
        await self.bus.publish(mcp_server_failed(self.world, server, exc))

    async def _title_chat(self, chat_id: str) -> None:
        """Name the chat after its first exchange, once (SPEC O5)."""
        if chat_id in self._titled:
            return
        if await self.storage.chat_is_titled(self.world, chat_id):
            self._titled.add(chat_id)
            return
        exchange = first_exchange(await self.storage.transcript(self.world, chat_id))
        if exchange is None:
            return
        question, answer = exchange
        provider: LLMProvider | None = None
        model = ""
        try:
            agent = await self.storage.get_agent(self.world, answer.sender)
            if agent.provider != "scripted":
                provider, model = self._providers.get(agent), agent.model
        except NotFoundError:
            pass
        title = await generate_title(provider, model, question.content or "", answer.content or "")
        await self.storage.rename_chat(self.world, chat_id, title)
        self._titled.add(chat_id)
