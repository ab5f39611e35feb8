"""The catalog half of ``AgentWorld``: worlds, agents and chats, created, changed and
deleted through one place, so every change is checked the same way and announced as a
``crud`` event (on the world's bus when it runs in this process, else straight into its
event log). ``AgentWorld`` adds running the worlds on top."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from agentworld.approval.shell_view import escape_controls, first_control
from agentworld.documents import agent_doc, world_doc
from agentworld.errors import AlreadyExistsError, InvalidInputError, NotFoundError
from agentworld.models import Agent, Chat, Message, Usage, World, new_id
from agentworld.models.domain import agent_name_problem
from agentworld.models.events import CrudEvent, MessageEvent
from agentworld.models.records import UsageGroup
from agentworld.process_secrets import note_key_variable
from agentworld.settings_checks import (
    build_settings,
    changed_fields,
    check_agent_settings,
    check_world_settings,
)
from agentworld.storage.event_log import EventLog, TranscriptPage
from agentworld.storage.sql import SQLStorage
from agentworld.world_changes import WholeWorldChanges, no_such_agent

if TYPE_CHECKING:
    from agentworld.runtime.world import ProviderFactory, WorldRuntime
    from agentworld.tools.registry import Tool

DeleteWatch = Callable[[CrudEvent], AbstractAsyncContextManager[None]]
"""What a caller does around a world's delete (``WorldCatalog.delete_world``), given the event
that announces it: entered once this process has stopped working in the world, left when its
rows are gone (or with the refusal: then nothing was deleted)."""

MAX_CHAT_NAME = 200
"""The longest chat name stored (the ``chats.name`` column)."""


class WorldCatalog(WholeWorldChanges):
    """Worlds, agents and chats over one database (see the module docstring); a whole world
    changed at once (``apply_world``) comes from ``world_changes``."""

    def __init__(
        self,
        storage: SQLStorage,
        *,
        tools: Sequence[Tool] = (),
        provider_factory: ProviderFactory | None = None,
    ) -> None:
        self.storage = storage
        self._tools = tuple(tools)
        self._provider_factory = provider_factory
        self._runtimes: dict[str, WorldRuntime] = {}
        """The worlds this process runs (started by ``AgentWorld.runtime``)."""

    # -- worlds ------------------------------------------------------------------

    async def create_world(self, name: str, **settings: Any) -> World:
        """Create a world; its tools work in ``working_dir`` (default: the current directory).

        World names, like agent names, are unique regardless of case: ``Team`` cannot be
        created next to ``team``. A new world has no agents, so ``main_agent`` can name none:
        it is set once its agent exists (else human messages would go to nobody, unanswered)."""
        settings.setdefault("working_dir", os.getcwd())
        if "main_agent" in settings and not settings["main_agent"]:
            settings["main_agent"] = None  # "" is none, as ``update_world`` reads it
        world = build_settings(World, {"name": name, **settings})
        for existing in await self.storage.list_worlds():
            if existing.name.lower() == name.lower():
                same = "" if existing.name == name else " (names are unique regardless of case)"
                raise AlreadyExistsError(f"world {existing.name!r} already exists{same}")
        if world.main_agent:  # checked as ``update_world`` checks it; a new world has no agents
            raise no_such_agent(name, world.main_agent, [])
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
        world = build_settings(World, {**current.model_dump(), **changes, "name": name})
        check_world_settings(world, extra_tools=self._tools)
        world = await self.storage.update_world(world)
        await self._announce(
            CrudEvent(
                world=name, operation="update", entity="world", name=name,
                data=changed_fields(world_doc(world), World, changes),
            )
        )
        return world

    async def world_name(self, name: str) -> str:
        """The stored spelling of the world ``name`` names: world names, like agent names and
        @mentions, are one name whatever their case (``Team`` cannot be created beside
        ``team``), so ``team`` finds ``Team``. A name no world has comes back as given, for
        the caller to report unknown. A world this process runs is known without a read."""
        if name in self._runtimes:
            return name
        names = await self.storage.world_names()
        if name in names:
            return name
        folded = name.lower()
        return next((stored for stored in names if stored.lower() == folded), name)

    async def get_world(self, name: str) -> World:
        return await self.storage.get_world(name)

    async def list_worlds(self) -> list[World]:
        return await self.storage.list_worlds()

    async def delete_world(self, name: str, *, watch: DeleteWatch | None = None) -> None:
        """Delete a world with everything in it, once this process has stopped working in it.

        The ``crud`` event that announces it cannot go into the world's event log, which goes
        with the world (a world created later under the name would inherit it); it reaches
        whoever ``watch``es the delete. The HTTP server's event streams do: they take in the
        world's last events while they are still stored, and end with this one."""
        runtime = self._runtimes.pop(name, None)
        if runtime is not None:
            await runtime.aclose()
        deleted = CrudEvent(world=name, operation="delete", entity="world", name=name)
        async with watch(deleted) if watch is not None else nullcontext():
            await self.storage.delete_world(name)

    # -- agents ------------------------------------------------------------------

    async def create_agent(self, world: str, name: str, **settings: Any) -> Agent:
        """Create an agent. Its name is unique in the world regardless of case and is none of
        the senders routing gives a meaning (``human``, ``user``, ``you``, ``system``,
        ``world``); its provider settings are checked now rather than at its first turn."""
        if (problem := agent_name_problem(name)) is not None:
            raise InvalidInputError(f"invalid name {name!r}: {problem}")
        agent = build_settings(Agent, {"world": world, "name": name, **settings})
        await self.storage.get_world(world)
        try:
            existing = await self.storage.get_agent(world, name)
        except NotFoundError:
            pass
        else:
            raise AlreadyExistsError(f"agent {existing.name!r} already exists in world {world!r}")
        self._check_agent(agent)
        agent = await self.storage.create_agent(agent)
        note_key_variable(agent.api_key_env)  # withheld from tools and masked from now on
        await self._announce(CrudEvent(world=world, operation="create", entity="agent", name=name))
        return agent

    async def update_agent(self, world: str, name: str, **changes: Any) -> Agent:
        current = await self.storage.get_agent(world, name)
        agent = build_settings(Agent, {**current.model_dump(), **changes, "world": world, "name": current.name})
        self._check_agent(agent)
        agent = await self.storage.update_agent(agent)
        note_key_variable(agent.api_key_env)
        await self._announce(
            CrudEvent(
                world=world, operation="update", entity="agent", name=name,
                data=changed_fields(agent_doc(agent), Agent, changes),
            )
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
        await self._announce(CrudEvent(world=world, operation="delete", entity="agent", name=stored))
        settings = await self.storage.get_world(world)
        if settings.main_agent is not None and settings.main_agent.lower() == stored.lower():
            # Stored directly: the rest of the settings are not this change's business.
            await self.storage.update_world(settings.model_copy(update={"main_agent": None}))
            await self._announce(
                CrudEvent(world=world, operation="update", entity="world", name=world, data={"mainAgent": None})
            )

    async def _main_agent(self, world: str, name: str | None) -> str | None:
        """The stored spelling of the agent ``name`` names, for the ``main_agent`` setting."""
        if not name:
            return None
        try:
            return (await self.storage.get_agent(world, name)).name
        except NotFoundError:
            agents = [a.name for a in await self.storage.list_agents(world)]
            raise no_such_agent(world, name, agents) from None

    def _check_agent(self, agent: Agent) -> None:
        """Provider settings that would only fail at the agent's first turn. An embedder's
        ``provider_factory`` builds providers its own way, so then only the URL is checked."""
        check_agent_settings(agent, builtin_providers=self._provider_factory is None)

    # -- chats -------------------------------------------------------------------

    async def new_chat(self, world: str) -> Chat:
        """Create a chat and make it the world's current chat."""
        chat = await self.storage.create_chat(Chat(world=world, chat_id=new_id("chat_"), name="New chat"))
        current = await self.storage.get_world(world)
        await self.storage.update_world(current.model_copy(update={"current_chat_id": chat.chat_id}))
        await self._announce(
            CrudEvent(world=world, operation="create", entity="chat", name=chat.name, chat_id=chat.chat_id)
        )
        return chat

    async def branch_chat(self, world: str, message_id: str, *, chat_id: str | None = None) -> Chat:
        """A new chat whose transcript and every agent's memory are those of the chat of
        ``message_id`` up to and including that message (SPEC K1); it becomes the world's
        current chat. The source is left as it is, with whatever waits in it. ``chat_id``
        names the source (a message of another chat is unknown); without it, the chat whose
        transcript holds the message."""
        await self.storage.get_world(world)
        source = chat_id if chat_id is not None else await self.storage.chat_of_message(world, message_id)
        chat = await self.storage.branch_chat(world, source, message_id, new_chat_id=new_id("chat_"))
        current = await self.storage.get_world(world)
        await self.storage.update_world(current.model_copy(update={"current_chat_id": chat.chat_id}))
        branch_of = {"chatId": source, "messageId": message_id}
        await self._announce(
            CrudEvent(
                world=world, operation="create", entity="chat", name=chat.chat_id,
                chat_id=chat.chat_id, data={"branchOf": branch_of},
            )
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
        """Give a chat a name of one's own; it is no longer replaced by a generated title.

        Blanks are folded into single spaces. Other control characters (ESC, BEL, the bidi
        overrides) are refused: a name is shown in other people's terminals and files."""
        if (control := first_control(name, allow="\t\n\r")) is not None:
            raise InvalidInputError(
                f"a chat name cannot contain control characters (found {escape_controls(control)})"
            )
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

    async def transcript_page(
        self, world: str, chat_id: str, *, after: int = 0, limit: int = 1000
    ) -> TranscriptPage:
        """Up to ``limit`` transcript messages of the chat after position ``after`` (whichever
        process stored them), with the position to go on from."""
        await self.get_world(world)
        if not await self.storage.chat_exists(world, chat_id):  # not get_chat: it counts messages
            raise NotFoundError(f"chat {chat_id!r} not found in world {world!r}")
        return await EventLog(self.storage).transcript_page(world, chat_id, after=after, limit=limit)

    async def transcript_position(self) -> int:
        """Where the transcripts stand now: a page read ``after`` it holds only what was said
        since (the position is the database's, across worlds and chats)."""
        return await self.storage.last_seq()

    async def logged_since(
        self, world: str, after: int | None
    ) -> tuple[list[MessageEvent | CrudEvent], int]:
        """What the world's event log holds after position ``after``, whichever process did it:
        transcript messages stored and ``crud`` events (chats branched, messages removed …),
        in order; and the position to go on from (with ``after`` None, nothing and the position
        now). Log positions are never reused, so a reader misses nothing, also after messages
        were removed. An event this version cannot read is skipped."""
        log = EventLog(self.storage)
        if after is None:
            return [], await log.head(world)
        found: list[MessageEvent | CrudEvent] = []
        while True:
            batch = await log.after(world, after)
            for event in batch.events:
                kind = MessageEvent if event.kind == "message" else CrudEvent if event.kind == "crud" else None
                if kind is not None:
                    with contextlib.suppress(ValueError):  # pydantic's ValidationError
                        found.append(kind.model_validate(event.document))
            after = batch.last_seq
            if not batch.full:
                return found, after

    async def agent_memory(
        self, world: str, agent: str, *, chat_id: str | None = None
    ) -> list[Message]:
        """An agent's memory of one chat, or of every chat."""
        if chat_id is not None:
            await self.get_chat(world, chat_id)
        owner = await self.storage.get_agent(world, agent)
        return await self.storage.memory(world, owner.name, chat_id)

    async def chat_usage(self, world: str, *, chat_id: str | None = None) -> dict[str, Usage]:
        """Tokens used in each chat of the world, by chat id (chats nobody answered are
        absent); with ``chat_id``, in that chat alone."""
        await self.storage.get_world(world)
        return await self.storage.usage_by_chat(world, chat_id=chat_id)

    async def usage_groups(self, world: str, *, chat_id: str | None = None) -> list[UsageGroup]:
        """The agents' model calls of the world (or of one chat), summed by agent, chat and
        model with their recorded cost (SPEC O2)."""
        await self.storage.get_world(world)
        if chat_id is not None:
            await self.get_chat(world, chat_id)
        return await self.storage.usage.groups(world, chat_id=chat_id)

    async def agent_usage(self, world: str, agent: str) -> Usage:
        """Tokens the agent used over every chat of the world (zero for one that never
        answered); an unknown agent is a ``NotFoundError``."""
        owner = await self.storage.get_agent(world, agent)
        return (await self.storage.usage_by_agent(world)).get(owner.name, Usage())

    async def _announce(self, event: CrudEvent) -> None:
        runtime = self._runtimes.get(event.world)
        if runtime is not None:
            await runtime.bus.publish(event)
        else:
            await EventLog(self.storage).append([event])
