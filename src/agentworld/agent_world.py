"""``AgentWorld``: the embedding entry point (SPEC I1) and what the CLI drives.

It owns the storage and one ``WorldRuntime`` per world in use. CRUD goes
through here so every change is validated the same way and announced as a
``crud`` event.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agentworld.errors import AlreadyExistsError, InvalidInputError, NotFoundError
from agentworld.models import Agent, Chat, Message, Usage, World
from agentworld.models.domain import agent_name_problem, sender_problem
from agentworld.models.events import CrudEvent, SystemEvent, WorldEvent
from agentworld.models.pending import PendingApproval, PendingClientCall
from agentworld.routing.messages import why_nobody_answers
from agentworld.settings_checks import check_agent_settings, check_world_settings
from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage

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


MAX_CHAT_NAME = 200
"""The longest chat name stored (the ``chats.name`` column)."""


def _invalid(exc: ValidationError) -> InvalidInputError:
    """One line naming each setting that is wrong (``turn_limit: …``); interfaces put their own
    names on the settings (the CLI says ``--turn-limit``)."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "value"
        message = error["msg"].removeprefix("Value error, ")
        # A rule of our own may already name its setting ("tool_env: 'X' is not …").
        parts.append(message if message.startswith(f"{where}: ") else f"{where}: {message}")
    return InvalidInputError("; ".join(parts))


def _build(model: type[World] | type[Agent], data: dict[str, Any]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _invalid(exc) from None


@dataclass
class SendResult:
    """What one ``send`` produced: the chat, the new transcript messages, and errors seen."""

    chat_id: str
    messages: list[Message]
    errors: list[str] = field(default_factory=list)
    pending_approvals: list[PendingApproval] = field(default_factory=list)
    """Approval requests of the chat still waiting for a person after the run."""
    notices: list[str] = field(default_factory=list)
    """Things the person should know that are not errors: e.g. that the message reached
    nobody, and why."""
    timed_out: bool = False
    """The wait ended at its timeout: the chat still had work, which goes on (or is resumed
    by the next process that runs the world) — it is never abandoned."""


@dataclass
class ResumeResult:
    """What ``resume`` finished: per chat that had work left, what it produced."""

    world: str
    chats: list[SendResult]
    timed_out: bool = False


async def _run_until_idle(
    runtime: WorldRuntime, chat: str, timeout: float | None, *, everything: bool = True
) -> bool:
    """Wait until the chat is idle, then (``everything``) until every chat this process took up
    (work other processes left) is done; False if ``timeout`` seconds passed first (the work
    goes on)."""
    try:
        async with asyncio.timeout(timeout):
            await runtime.wait_until_idle(chat)
            if everything:
                await runtime.wait_until_idle()
    except TimeoutError:
        return False
    return True


class AgentWorld:
    """Worlds of agents over one database. ``async with AgentWorld(db) as aw: ...``"""

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
    ) -> None:
        self.storage = SQLStorage(db)
        self.long_lived = long_lived
        """A process that keeps running (a server): a call waits for its own chat only, never
        for the other chats this process runs — their work goes on in the background."""
        self._on_event = tuple(on_event) if isinstance(on_event, Sequence) else (on_event,)
        self._streaming = streaming
        self.interactive = interactive
        """False when nobody will answer approval requests: calls that need one are denied."""
        self._provider_factory = provider_factory
        self._tools = tuple(tools)
        self._authorizer = authorizer
        self._runtimes: dict[str, WorldRuntime] = {}
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

    # -- worlds ------------------------------------------------------------------

    async def create_world(self, name: str, **settings: Any) -> World:
        """Create a world; its tools work in ``working_dir`` (default: the current directory).

        World names, like agent names, are unique regardless of case: ``Team`` cannot be
        created next to ``team``."""
        settings.setdefault("working_dir", os.getcwd())
        world = _build(World, {"name": name, **settings})
        for existing in await self.storage.list_worlds():
            if existing.name.lower() == name.lower():
                same = "" if existing.name == name else " (names are unique regardless of case)"
                raise AlreadyExistsError(f"world {existing.name!r} already exists{same}")
        check_world_settings(world, extra_tools=self._tools)
        world = await self.storage.create_world(world)
        await self._announce(CrudEvent(world=name, operation="create", entity="world", name=name))
        return world

    async def update_world(self, name: str, **changes: Any) -> World:
        """Change the settings given; ``main_agent`` must name an agent of the world (stored
        with that agent's own spelling), None or "" clears it."""
        current = await self.storage.get_world(name)
        if "main_agent" in changes:
            changes["main_agent"] = await self._main_agent(name, changes["main_agent"])
        world = _build(World, {**current.model_dump(), **changes, "name": name})
        check_world_settings(world, extra_tools=self._tools)
        world = await self.storage.update_world(world)
        await self._announce(
            CrudEvent(world=name, operation="update", entity="world", name=name, data=_jsonable(changes))
        )
        return world

    async def get_world(self, name: str) -> World:
        return await self.storage.get_world(name)

    async def list_worlds(self) -> list[World]:
        return await self.storage.list_worlds()

    async def delete_world(self, name: str) -> None:
        runtime = self._runtimes.pop(name, None)
        if runtime is not None:
            await runtime.aclose()
        await self.storage.delete_world(name)

    # -- agents ------------------------------------------------------------------

    async def create_agent(self, world: str, name: str, **settings: Any) -> Agent:
        """Create an agent. Its name is unique in the world regardless of case and is none of
        the senders routing gives a meaning (``human``, ``user``, ``you``, ``system``,
        ``world``); its provider settings are checked now rather than at its first turn."""
        if (problem := agent_name_problem(name)) is not None:
            raise InvalidInputError(f"invalid name {name!r}: {problem}")
        agent = _build(Agent, {"world": world, "name": name, **settings})
        await self.storage.get_world(world)
        try:
            existing = await self.storage.get_agent(world, name)
        except NotFoundError:
            pass
        else:
            raise AlreadyExistsError(f"agent {existing.name!r} already exists in world {world!r}")
        self._check_agent(agent)
        agent = await self.storage.create_agent(agent)
        await self._announce(CrudEvent(world=world, operation="create", entity="agent", name=name))
        return agent

    async def update_agent(self, world: str, name: str, **changes: Any) -> Agent:
        current = await self.storage.get_agent(world, name)
        agent = _build(Agent, {**current.model_dump(), **changes, "world": world, "name": current.name})
        self._check_agent(agent)
        agent = await self.storage.update_agent(agent)
        await self._announce(
            CrudEvent(world=world, operation="update", entity="agent", name=name, data=_jsonable(changes))
        )
        return agent

    async def get_agent(self, world: str, name: str) -> Agent:
        return await self.storage.get_agent(world, name)

    async def list_agents(self, world: str) -> list[Agent]:
        await self.storage.get_world(world)
        return await self.storage.list_agents(world)

    async def delete_agent(self, world: str, name: str) -> None:
        """Delete an agent with its memory and session grants; its pending approvals and client
        calls are cancelled (answering them is refused, nothing runs). "Always" grants stay.
        When it was the world's main agent, the world has none afterwards."""
        stored = await self.storage.delete_agent(world, name)
        runtime = self._runtimes.get(world)
        if runtime is not None:
            runtime.forget_agent(stored)
        await self._announce(CrudEvent(world=world, operation="delete", entity="agent", name=name))
        settings = await self.storage.get_world(world)
        if settings.main_agent is not None and settings.main_agent.lower() == stored.lower():
            # Stored directly: the rest of the settings are not this change's business.
            await self.storage.update_world(settings.model_copy(update={"main_agent": None}))
            await self._announce(
                CrudEvent(world=world, operation="update", entity="world", name=world, data={"main_agent": None})
            )

    async def _main_agent(self, world: str, name: str | None) -> str | None:
        """The stored spelling of the agent ``name`` names, for the ``main_agent`` setting."""
        if not name:
            return None
        try:
            return (await self.storage.get_agent(world, name)).name
        except NotFoundError:
            agents = [a.name for a in await self.storage.list_agents(world)]
            known = f"agents: {', '.join(agents)}" if agents else "it has no agents yet"
            raise InvalidInputError(
                f"main_agent: world {world!r} has no agent {name!r} ({known})"
            ) from None

    def _check_agent(self, agent: Agent) -> None:
        """Provider settings that would only fail at the agent's first turn. An embedder's
        ``provider_factory`` builds providers its own way, so then only the URL is checked."""
        check_agent_settings(agent, builtin_providers=self._provider_factory is None)

    # -- chats -------------------------------------------------------------------

    async def new_chat(self, world: str) -> Chat:
        """Create a chat and make it the world's current chat."""
        runtime = await self.runtime(world)
        chat = await runtime.new_chat()
        current = await self.storage.get_world(world)
        await self.storage.update_world(current.model_copy(update={"current_chat_id": chat.chat_id}))
        await self._announce(
            CrudEvent(world=world, operation="create", entity="chat", name=chat.name, chat_id=chat.chat_id)
        )
        return chat

    async def list_chats(self, world: str) -> list[Chat]:
        await self.storage.get_world(world)
        return await self.storage.list_chats(world)

    async def current_chat(self, world: str) -> str:
        """The world's current chat, created on first use."""
        settings = await self.storage.get_world(world)
        if settings.current_chat_id is not None:
            return settings.current_chat_id
        return (await self.new_chat(world)).chat_id

    async def get_chat(self, world: str, chat_id: str) -> Chat:
        """One chat of the world; an unknown world or chat id is a ``NotFoundError``."""
        await self.storage.get_world(world)
        return await self.storage.get_chat(world, chat_id)

    async def use_chat(self, world: str, chat_id: str) -> Chat:
        """Make an existing chat the world's current chat (where ``send`` goes by default)."""
        chat = await self.get_chat(world, chat_id)
        current = await self.storage.get_world(world)
        await self.storage.update_world(current.model_copy(update={"current_chat_id": chat_id}))
        await self._announce(
            CrudEvent(
                world=world, operation="update", entity="chat", name=chat.name, chat_id=chat_id,
                data={"current": True},
            )
        )
        return chat

    async def rename_chat(self, world: str, chat_id: str, name: str) -> Chat:
        """Give a chat a name of one's own; it is no longer replaced by a generated title."""
        title = " ".join(name.split())
        if not title or len(title) > MAX_CHAT_NAME:
            raise InvalidInputError(f"a chat name is 1 to {MAX_CHAT_NAME} characters")
        await self.get_chat(world, chat_id)
        await self.storage.rename_chat(world, chat_id, title, titled=True)
        await self._announce(
            CrudEvent(
                world=world, operation="update", entity="chat", name=title, chat_id=chat_id,
                data={"name": title},
            )
        )
        return await self.storage.get_chat(world, chat_id)

    async def delete_chat(self, world: str, chat_id: str) -> None:
        """Delete a chat with its messages, memories, events, tool logs, waiting calls and
        session grants; the audit log keeps its entries and records the deletion. A chat that
        still has work in its inbox (whichever process runs it) is refused; if it was the
        current chat, there is none."""
        runtime = self._runtimes.get(world)
        busy = runtime is not None and not runtime.is_idle(chat_id)
        chat = await self.get_chat(world, chat_id)
        if busy or await self.storage.inbox.has_work(world, chat_id):
            raise InvalidInputError(
                f"chat {chat_id!r} still has work to do: let it finish "
                f"(`agentworld resume {world}` finishes what a stopped process left) and retry"
            )
        await self.storage.delete_chat(world, chat_id)
        await self._announce(
            CrudEvent(world=world, operation="delete", entity="chat", name=chat.name, chat_id=chat_id)
        )

    async def transcript(self, world: str, chat_id: str) -> list[Message]:
        """A chat's transcript: what was said in it, in order."""
        await self.get_chat(world, chat_id)
        return await self.storage.transcript(world, chat_id)

    async def agent_memory(
        self, world: str, agent: str, *, chat_id: str | None = None
    ) -> list[Message]:
        """An agent's memory of one chat, or of every chat."""
        if chat_id is not None:
            await self.get_chat(world, chat_id)
        owner = await self.storage.get_agent(world, agent)
        return await self.storage.memory(world, owner.name, chat_id)

    async def chat_usage(self, world: str) -> dict[str, Usage]:
        """Tokens used in each chat of the world, by chat id (chats nobody answered are absent)."""
        await self.storage.get_world(world)
        return await self.storage.usage_by_chat(world)

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
        """Publish ``text`` and run the world until the chat is idle; return what it produced."""
        runtime = await self.runtime(world)
        chat = chat_id or await self.current_chat(world)
        errors = self._collect_errors(runtime, chat)
        try:
            start = await self.storage.last_seq()
            await runtime.send(chat, text, sender=sender)
            finished = await _run_until_idle(runtime, chat, timeout, everything=not self.long_lived)
        finally:
            errors.unsubscribe()
        result = await self._result(world, chat, start, errors.texts, timed_out=not finished)
        if finished and not result.errors and len(result.messages) <= 1:  # nobody answered: why?
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
        if not text.strip():
            raise InvalidInputError("text: the message is empty")
        agents = [agent.name for agent in await self.list_agents(world)]
        if (problem := sender_problem(sender, agents)) is not None:
            raise InvalidInputError(f"sender {sender!r}: {problem}")
        runtime = await self.runtime(world)
        return await runtime.send(chat_id or await self.current_chat(world), text, sender=sender)

    def started_runtime(self, world: str) -> WorldRuntime | None:
        """The world's runtime if this process has started it; None otherwise (nothing starts)."""
        return self._runtimes.get(world)

    async def _result(
        self, world: str, chat: str, start: int, errors: list[str], *, timed_out: bool = False
    ) -> SendResult:
        messages = await self.storage.messages_since(world, chat, start)
        waiting = await self.storage.pending.find(world, chat_id=chat, kind="approval")
        return SendResult(
            chat_id=chat,
            messages=messages,
            errors=errors,
            pending_approvals=waiting,
            timed_out=timed_out,
        )

    async def stop(self, world: str, chat_id: str | None = None, *, by: str = "human") -> StopOutcome:
        """Stop the chat's running work (Ctrl-C in ``talk``): see ``WorldRuntime.stop``."""
        runtime = await self.runtime(world)
        return await runtime.stop(chat_id or await self.current_chat(world), by=by)

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
        results = [await self._result(world, chat, start, []) for chat in chats]
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
        timeout: float | None = None,
    ) -> SendResult:
        """Answer an approval request, run the world until idle, return what it produced."""
        runtime = await self.runtime(world)
        pending = await self.storage.pending.get(world, approval_id)
        chat = pending.chat_id if pending is not None else ""
        errors = self._collect_errors(runtime, chat)
        try:
            start = await self.storage.last_seq()
            await runtime.answer_approval(approval_id, decision=decision, scope=scope, actor=actor)
            finished = await _run_until_idle(runtime, chat, timeout, everything=not self.long_lived)
        finally:
            errors.unsubscribe()
        return await self._result(world, chat, start, errors.texts, timed_out=not finished)

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

    async def audit_log(self, world: str) -> list[dict[str, Any]]:
        await self.storage.get_world(world)
        return await self.storage.approvals.audit_log(world)

    async def pending_calls(
        self, world: str, *, chat_id: str | None = None
    ) -> list[PendingClientCall]:
        """Client-side tool calls waiting for their results."""
        await self.storage.get_world(world)
        return await self.storage.pending.find(world, chat_id=chat_id, kind="client")

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
        runtime = await self.runtime(world)
        pending = await self.storage.pending.get(world, tool_call_id)
        chat = pending.chat_id if pending is not None else ""
        errors = self._collect_errors(runtime, chat)
        try:
            start = await self.storage.last_seq()
            await runtime.submit_tool_result(tool_call_id, result, is_error=is_error)
            finished = await _run_until_idle(runtime, chat, timeout, everything=not self.long_lived)
        finally:
            errors.unsubscribe()
        return await self._result(world, chat, start, errors.texts, timed_out=not finished)

    async def tools(self, world: str) -> list[Tool]:
        """The tools the world's agents are offered now (starting its MCP servers if needed)."""
        runtime = await self.runtime(world)
        return list(await runtime.tools())

    async def tool_logs(self, world: str, *, chat_id: str | None = None) -> list[dict[str, Any]]:
        await self.storage.get_world(world)
        return await self.storage.tool_logs.find(world, chat_id=chat_id)

    def _collect_errors(self, runtime: WorldRuntime, chat: str) -> _ErrorCollector:
        return _ErrorCollector(runtime, chat)

    async def _announce(self, event: CrudEvent) -> None:
        runtime = self._runtimes.get(event.world)
        if runtime is not None:
            await runtime.bus.publish(event)
        else:
            await EventLog(self.storage).append([event])


class _ErrorCollector:
    """Collects the error events of one chat while a command runs, to report them at the end."""

    def __init__(self, runtime: WorldRuntime, chat: str) -> None:
        self.texts: list[str] = []
        self._chat = chat
        self.unsubscribe = runtime.bus.subscribe(self._collect, kinds=["system"], name="command-errors")

    def _collect(self, event: WorldEvent) -> None:
        if isinstance(event, SystemEvent) and event.level == "error" and event.chat in (self._chat, None):
            self.texts.append(event.text)


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, str | int | float | bool | None | list | dict) else str(v) for k, v in data.items()}
