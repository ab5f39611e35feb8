"""``AgentWorld``: the embedding entry point (SPEC I1) and what the CLI drives.

It owns the storage and one ``WorldRuntime`` per world in use. CRUD goes
through here so every change is validated the same way and announced as a
``crud`` event.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentworld.errors import InvalidInputError, NotFoundError
from agentworld.message_edits import MessageEdits
from agentworld.models import Message
from agentworld.models.domain import sender_problem
from agentworld.models.pending import (
    PendingApproval,
    PendingCall,
    PendingClientCall,
    PendingQuestion,
)
from agentworld.models.records import AuditEntry, ChatActivity, ToolLogEntry
from agentworld.models.text import text_problem
from agentworld.routing.messages import why_nobody_answers
from agentworld.run_results import (
    Posting,
    ResumeResult,
    SendResult,
    StopRequest,
    chat_outcome,
    run_and_report,
)
from agentworld.storage.sql import SQLStorage
from agentworld.world_catalog import WorldCatalog

if TYPE_CHECKING:
    # The runtime, tools, policies and hooks load when a world first runs, not for every CLI
    # command (SPEC §6: `agentworld messages` must start in well under half a second).
    from agentworld.approval.grants import Grant
    from agentworld.policy.rules import PolicyRule
    from agentworld.runtime.approvals import Decision, Scope
    from agentworld.runtime.authorizer import Authorizer, CallVerdict, PolicyAuthorizer
    from agentworld.runtime.hooks import OnEvent
    from agentworld.runtime.stopping import StopOutcome
    from agentworld.runtime.streaming import StreamCallbacks
    from agentworld.runtime.world import ProviderFactory, WorldRuntime
    from agentworld.tools.registry import Tool


class AgentWorld(MessageEdits, WorldCatalog):
    """Worlds of agents over one database. ``async with AgentWorld(db) as aw: ...``

    The catalog (worlds, agents, chats) comes from ``WorldCatalog``, editing and deleting
    messages from ``MessageEdits``; this adds running them: one ``WorldRuntime`` per world in
    use, sending, approving, policy and tool inspection."""

    def __init__(
        self,
        db: str | None = None,
        *,
        provider_factory: ProviderFactory | None = None,
        tools: Sequence[Tool] = (),
        authorizer: Authorizer | None = None,
        interactive: bool = True,
        on_event: OnEvent | Sequence[OnEvent] = (),
        streaming: StreamCallbacks | None = None,
        long_lived: bool = False,
        stop_request: StopRequest | None = None,
        worker: bool = False,
        in_process: bool = False,
    ) -> None:
        super().__init__(SQLStorage(db), tools=tools, provider_factory=provider_factory)
        self.worker = worker
        self.in_process = in_process
        """This process runs its chats itself whatever ``AGENTWORLD_TEMPORAL`` says (the demo:
        a throwaway database and scripted agents no worker could see)."""
        """This process is such a worker (``agentworld worker``): it runs the chats their
        workflows hand it."""
        self.long_lived = long_lived
        """A process that keeps running (a server, ``talk``): listing approvals does not wait for
        the loops that expiring overdue ones resumed — their work goes on in the background.
        (Every command waits for its own chat only.)"""
        self._on_event = tuple(on_event) if isinstance(on_event, Sequence) else (on_event,)
        self._streaming = streaming
        self.interactive = interactive
        """False when nobody will answer approval requests: calls that need one are denied."""
        self._authorizer = authorizer
        self.stop_request = stop_request
        """A person's Ctrl-C (the CLI's): requested while ``send``, ``approve``, ``answer`` or
        ``respond`` runs its chat, it stops that chat's turn as ``stop`` does, and the call
        returns what was produced, ``interrupted`` set (SPEC K3)."""
        self._starting = asyncio.Lock()
        """Held while a runtime starts, so two first uses of a world never start two."""

    async def __aenter__(self) -> AgentWorld:
        await self.storage.open()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        runtimes, self._runtimes = list(self._runtimes.values()), {}
        for runtime in runtimes:
            await runtime.aclose()
        await self.storage.close()

    # -- running -----------------------------------------------------------------

    async def runtime(self, world: str) -> WorldRuntime:
        """The world's runtime, started (and resuming what stopped processes left) on first
        use; concurrent first uses get the same one."""
        runtime = self._runtimes.get(world)
        if runtime is not None:
            return runtime
        async with self._starting:
            runtime = self._runtimes.get(world)
            if runtime is None:
                from agentworld.runtime.engine import TemporalSettings  # imports no temporalio
                from agentworld.runtime.world import WorldRuntime

                runtime = WorldRuntime(
                    self.storage,
                    world,
                    provider_factory=self._provider_factory,
                    tools=self._tools,
                    authorizer=self._authorizer,
                    interactive=self.interactive,
                    on_event=self._on_event,
                    streaming=self._streaming,
                    # AGENTWORLD_TEMPORAL: on workers
                    temporal=None if self.in_process else TemporalSettings.from_env(),
                    worker=self.worker,
                )
                await runtime.__aenter__()
                self._runtimes[world] = runtime
        return runtime

    async def send(
        self,
        world: str,
        text: str,
        *,
        chat_id: str | None = None,
        sender: str = "human",
        timeout: float | None = None,
    ) -> SendResult:
        """Publish ``text`` and run the world until the chat is idle; return what it produced.
        Refused as ``post`` refuses it."""
        await self._refuse_unpostable(world, text, sender)
        runtime = await self.runtime(world)
        chat = chat_id if chat_id is not None else await self.current_chat(world)
        async def post() -> int:
            _message, posted = await runtime.post(chat, text, sender=sender)
            return posted.after_seq

        result = await run_and_report(
            self.storage, runtime, world, chat, Posting(post), timeout=timeout, stop=self.stop_request
        )
        quiet = not (result.timed_out or result.interrupted or result.errors)
        if quiet and len(result.messages) <= 1:  # nobody answered: why?
            settings, agents = await self.storage.world_and_agents(world)
            active = [a.name for a in agents if a.status == "active"]
            reason = why_nobody_answers(
                text, sender=sender, agents=active, main_agent=settings.main_agent
            )
            if reason is not None:
                result.notices.append(reason)
        return result

    async def post(
        self, world: str, text: str, *, chat_id: str | None = None, sender: str = "human"
    ) -> Message:
        """Publish ``text`` and return the stored message at once: the world answers in the
        background, in this process (a server) or whichever process runs the chat; follow it
        on the event stream. ``send`` is the same, waiting for the answers. The sender must be
        a name and not pose as one of the world's agents (SPEC R2)."""
        await self._refuse_unpostable(world, text, sender)
        runtime = await self.runtime(world)
        return await runtime.send(
            chat_id if chat_id is not None else await self.current_chat(world), text, sender=sender
        )

    async def _refuse_unpostable(self, world: str, text: str, sender: str) -> None:
        """Refuse, before anything is stored, a message no interface may publish: empty text,
        text that is not text (``models.text.text_problem``), a sender that is no name or
        poses as one of the world's agents (SPEC R2). The default sender is a reserved name no
        agent can have, so only another sender costs a read of the agents."""
        if not text.strip():
            raise InvalidInputError("text: the message is empty")
        if (problem := text_problem(text)) is not None:
            raise InvalidInputError(f"text: {problem}")
        if sender != "human":
            agents = [agent.name for agent in await self.list_agents(world)]
            if (problem := sender_problem(sender, agents)) is not None:
                raise InvalidInputError(f"sender {sender!r}: {problem}")

    def started_runtime(self, world: str) -> WorldRuntime | None:
        """The world's runtime if this process has started it; None otherwise (nothing starts)."""
        return self._runtimes.get(world)

    async def stop(self, world: str, chat_id: str | None = None, *, by: str = "human") -> StopOutcome:
        """Stop the chat's running work (Ctrl-C in ``talk``): see ``WorldRuntime.stop``."""
        runtime = await self.runtime(world)
        return await runtime.stop(chat_id if chat_id is not None else await self.current_chat(world), by=by)

    async def resume(self, world: str, *, timeout: float | None = None) -> ResumeResult:
        """Finish what stopped processes left in the world — unanswered messages, loops cut
        short, approved calls not yet run, overdue approvals — and return what that produced.
        (Every process that runs a world does this when it starts; this does only that.)"""
        start = await self.storage.last_seq()
        runtime = await self.runtime(world)
        chats = await runtime.resume_stopped_work()
        finished = True
        try:
            async with asyncio.timeout(timeout):
                for chat in chats:
                    await runtime.wait_until_idle(chat)
                await runtime.wait_until_idle()
        except TimeoutError:
            finished = False
        results = [await chat_outcome(self.storage, world, chat, start, []) for chat in chats]
        return ResumeResult(world=world, chats=results, timed_out=not finished)

    async def approvals(self, world: str, *, chat_id: str | None = None) -> list[PendingApproval]:
        """Approval requests waiting for a person (overdue ones are expired first, SPEC A7)."""
        runtime = await self.runtime(world)
        await runtime.approvals(chat_id)
        if not self.long_lived:
            await runtime.wait_until_idle()  # expiring one resumes its loop: let it finish first
        return await self.storage.pending.find(world, chat_id=chat_id, kind="approval")

    async def approve(
        self,
        world: str,
        approval_id: str,
        *,
        decision: Decision,
        scope: Scope = "once",
        actor: str = "human",
        arguments: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Answer an approval request, run the world until idle, return what it produced.

        ``arguments``: approve the call as corrected to these (SPEC F2): checked against the
        tool and authorized afresh first -- ``InvalidArgumentsError`` when the tool refuses them,
        ``PolicyDeniedError`` when the policy denies the call; either way nothing is answered."""

        def answer(runtime: WorldRuntime) -> Awaitable[object]:
            return runtime.answer_approval(
                approval_id, decision=decision, scope=scope, actor=actor, arguments=arguments
            )

        return await self._answer_and_run(world, approval_id, answer, timeout=timeout)

    async def questions(self, world: str, *, chat_id: str | None = None) -> list[PendingQuestion]:
        """Questions agents asked (``ask_user``, SPEC F3) that wait for an answer, overdue ones
        ended first (an unknown chat is an error)."""
        await self._require_chat(world, chat_id)
        runtime = await self.runtime(world)
        await runtime.questions(chat_id)
        if not self.long_lived:
            await runtime.wait_until_idle()  # ending one resumes its loop: let it finish first
        return await self.storage.pending.find(world, chat_id=chat_id, kind="question")

    async def answer(
        self, world: str, question_id: str, text: str, *, actor: str = "human", timeout: float | None = None
    ) -> SendResult:
        """Answer a question an agent asked, run the world until its chat is idle, return what
        it produced. Refused for an unknown, foreign, answered or expired id, and for an answer
        the question does not take (not one of its options when only they are taken, empty)."""

        def answer(runtime: WorldRuntime) -> Awaitable[object]:
            return runtime.answer_question(question_id, text, actor=actor)

        return await self._answer_and_run(world, question_id, answer, timeout=timeout)

    async def grants(self, world: str) -> list[Grant]:
        """Remembered session and always approvals that are still in force."""
        await self.storage.get_world(world)
        return await self.storage.approvals.grants(world)

    async def revoke_grant(self, world: str, grant_id: str) -> None:
        await self.storage.approvals.revoke(world, grant_id)

    async def policy_rules(self, world: str) -> list[PolicyRule]:
        """Every rule in force for the world, highest priority first (SPEC P6, P9)."""
        settings = await self.storage.get_world(world)
        runtime = await self.runtime(world)
        engine, errors, _grants = await self._policy().engine_for(
            settings, list(await runtime.tools())
        )
        if errors:
            raise InvalidInputError("; ".join(str(e) for e in errors))
        return list(engine.rules)

    async def check_tool_call(
        self,
        world: str,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        server: str | None = None,
        policy_files: Sequence[str] = (),
        mode: str | None = None,
        interactive: bool = True,
        agent: str | None = None,
        chat_id: str | None = None,
    ) -> CallVerdict:
        """What the runtime would decide for this call in ``world`` now, nothing run (SPEC P9):
        the world's tools (its MCP servers started to learn their annotations), every policy tier,
        its mode unless ``mode`` is given, and ``agent``'s session approvals in ``chat_id``.
        ``policy_files`` are added at tier 2, as if the world listed them."""
        from agentworld.runtime.authorizer import CallVerdict, callable_tool

        settings = await self.storage.get_world(world)
        found = callable_tool(await (await self.runtime(world)).tools(), tool_name, arguments)
        if isinstance(found, CallVerdict):
            return found
        return await self._policy().evaluate(
            settings,
            found,
            arguments,
            server=server,
            extra_files=policy_files,
            mode=mode,
            agent=agent,
            chat_id=chat_id,
            interactive=interactive and self.interactive,
        )

    def _policy(self) -> PolicyAuthorizer:
        """The runtime's policy authorizer (a custom ``Authorizer`` cannot be asked for rules)."""
        from agentworld.runtime.authorizer import PolicyAuthorizer

        if isinstance(self._authorizer, PolicyAuthorizer):
            return self._authorizer
        return PolicyAuthorizer(self.storage)

    async def audit_log(self, world: str) -> list[AuditEntry]:
        """Every approval request and decision, policy denial, hook rewrite, cancelled call and
        deletion in the world, oldest first (SPEC A9)."""
        await self.storage.get_world(world)
        return await self.storage.approvals.audit_log(world)

    async def pending_calls(
        self, world: str, *, chat_id: str | None = None
    ) -> list[PendingClientCall]:
        """Client-side tool calls waiting for their results (an unknown chat is an error)."""
        await self._require_chat(world, chat_id)
        return await self.storage.pending.find(world, chat_id=chat_id, kind="client")

    async def pending_call(self, world: str, call_id: str) -> PendingCall | None:
        """The waiting call (approval request or client-side call) with this id, in whatever
        status it is now — pending, answered, expired, cancelled — or None when the world has
        none: so an interface can tell an unknown id from one answered already."""
        await self.storage.get_world(world)
        return await self.storage.pending.get(world, call_id)

    async def respond(
        self,
        world: str,
        tool_call_id: str,
        result: Any,
        *,
        is_error: bool = False,
        timeout: float | None = None,
    ) -> SendResult:
        """Post a client-side tool result, run the world until idle, return what it produced."""

        def answer(runtime: WorldRuntime) -> Awaitable[object]:
            return runtime.submit_tool_result(tool_call_id, result, is_error=is_error)

        return await self._answer_and_run(world, tool_call_id, answer, timeout=timeout)

    async def _answer_and_run(
        self,
        world: str,
        call_id: str,
        answer: Callable[[WorldRuntime], Awaitable[object]],
        *,
        timeout: float | None,
    ) -> SendResult:
        """Answer the waiting call ``call_id`` (an approval request, a question, a client-side
        call) by ``answer``, run the world until its chat is idle and report what it produced."""
        runtime = await self.runtime(world)
        pending = await self.storage.pending.get(world, call_id)
        chat = pending.chat_id if pending is not None else ""
        return await run_and_report(
            self.storage, runtime, world, chat, lambda: answer(runtime), timeout=timeout,
            stop=self.stop_request,
        )

    async def tools(self, world: str) -> list[Tool]:
        """The tools the world's agents are offered now (starting its MCP servers if needed)."""
        runtime = await self.runtime(world)
        return list(await runtime.tools())

    async def tool_logs(self, world: str, *, chat_id: str | None = None) -> list[ToolLogEntry]:
        """Every tool execution in the world (or one chat), in the order they started (SPEC E4);
        an unknown chat is an error."""
        await self._require_chat(world, chat_id)
        return await self.storage.tool_logs.find(world, chat_id=chat_id)

    async def _require_chat(self, world: str, chat_id: str | None) -> None:
        """``NotFoundError`` for an unknown world, or for an unknown chat when one is named."""
        await self.storage.get_world(world)
        if chat_id is not None and not await self.storage.chat_exists(world, chat_id):
            raise NotFoundError(f"chat {chat_id!r} not found in world {world!r}")

    async def chat_activity(self, world: str) -> list[ChatActivity]:
        """What each chat of the world is doing now: queued work, the process running it,
        approvals, questions and client calls it waits for. Read from storage, so it holds
        whichever process runs the chat (SPEC O4: one runner per chat across processes)."""
        chats = await self.list_chats(world)
        queued = Counter(item.chat_id for item in await self.storage.inbox.items(world))
        waiting = await self.storage.pending.find(world)
        approvals = Counter(p.chat_id for p in waiting if isinstance(p, PendingApproval))
        calls = Counter(p.chat_id for p in waiting if isinstance(p, PendingClientCall))
        questions = Counter(p.chat_id for p in waiting if isinstance(p, PendingQuestion))
        activity = []
        for chat in chats:
            queued_items = queued[chat.chat_id]
            # Only a chat with queued work can be running: the others need no lookup.
            runner = await self.storage.leases.holder(world, chat.chat_id) if queued_items else None
            activity.append(
                ChatActivity(
                    chat_id=chat.chat_id,
                    name=chat.name,
                    queued_items=queued_items,
                    runner=runner,
                    pending_approvals=approvals[chat.chat_id],
                    pending_tool_calls=calls[chat.chat_id],
                    pending_questions=questions[chat.chat_id],
                )
            )
        return activity
