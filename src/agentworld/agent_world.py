"""``AgentWorld``: the embedding entry point (SPEC I1) and what the CLI drives.

It owns the storage and one ``WorldRuntime`` per world in use. CRUD goes
through here so every change is validated the same way and announced as a
``crud`` event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agentworld.errors import InvalidInputError
from agentworld.models import Agent, Chat, Message, World
from agentworld.models.events import CrudEvent, SystemEvent, WorldEvent
from agentworld.runtime.world import ProviderFactory, WorldRuntime
from agentworld.storage.sql import SQLStorage
from agentworld.tools.executor import ToolExecutor


def _invalid(exc: ValidationError) -> InvalidInputError:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "value"
        parts.append(f"{where}: {error['msg']}")
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


class AgentWorld:
    """Worlds of agents over one database. ``async with AgentWorld(db) as aw: ...``"""

    def __init__(
        self,
        db: str | None = None,
        *,
        provider_factory: ProviderFactory | None = None,
        tools: ToolExecutor | None = None,
    ) -> None:
        self.storage = SQLStorage(db)
        self._provider_factory = provider_factory
        self._tools = tools
        self._runtimes: dict[str, WorldRuntime] = {}

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
        world = await self.storage.create_world(_build(World, {"name": name, **settings}))
        await self._announce(CrudEvent(world=name, operation="create", entity="world", name=name))
        return world

    async def update_world(self, name: str, **changes: Any) -> World:
        current = await self.storage.get_world(name)
        world = _build(World, {**current.model_dump(), **changes, "name": name})
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
        agent = await self.storage.create_agent(_build(Agent, {"world": world, "name": name, **settings}))
        await self._announce(CrudEvent(world=world, operation="create", entity="agent", name=name))
        return agent

    async def update_agent(self, world: str, name: str, **changes: Any) -> Agent:
        current = await self.storage.get_agent(world, name)
        agent = _build(Agent, {**current.model_dump(), **changes, "world": world, "name": current.name})
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
        await self.storage.delete_agent(world, name)
        await self._announce(CrudEvent(world=world, operation="delete", entity="agent", name=name))

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

    # -- running -----------------------------------------------------------------

    async def runtime(self, world: str) -> WorldRuntime:
        runtime = self._runtimes.get(world)
        if runtime is None:
            runtime = WorldRuntime(
                self.storage, world, provider_factory=self._provider_factory, tools=self._tools
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
        errors: list[str] = []

        def collect(event: WorldEvent) -> None:
            if isinstance(event, SystemEvent) and event.level == "error" and event.chat in (chat, None):
                errors.append(event.text)

        unsubscribe = runtime.bus.subscribe(collect, kinds=["system"], name="send-errors")
        try:
            start = await self.storage.last_seq()
            await runtime.send(chat, text, sender=sender)
            await runtime.wait_until_idle(chat, timeout=timeout)
        finally:
            unsubscribe()
        messages = await self.storage.messages_since(world, chat, start)
        return SendResult(chat_id=chat, messages=messages, errors=errors)

    async def _announce(self, event: CrudEvent) -> None:
        runtime = self._runtimes.get(event.world)
        if runtime is not None:
            await runtime.bus.publish(event)
        else:
            await self.storage.append_events([event])


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, str | int | float | bool | None | list | dict) else str(v) for k, v in data.items()}
