"""A whole world changed at once: its settings and its agents created, changed and deleted in one
transaction (a world file's plan, ``world_apply``). The part of ``AgentWorld`` that does it,
checked as the one-by-one methods of ``WorldCatalog`` check, announced as they announce."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentworld.documents import agent_doc, world_doc
from agentworld.errors import InvalidInputError
from agentworld.models import Agent, World
from agentworld.models.domain import agent_name_problem
from agentworld.models.events import CrudEvent
from agentworld.process_secrets import note_key_variable
from agentworld.settings_checks import changed_fields, check_world_settings
from agentworld.storage.sql import SQLStorage
from agentworld.storage.world_changes import WorldChanges

if TYPE_CHECKING:
    from agentworld.runtime.world import WorldRuntime
    from agentworld.tools.registry import Tool

_STATE = ("name", "current_chat_id", "created_at", "updated_at")
"""A world's fields no settings change touches."""


def no_such_agent(world: str, name: str, agents: Sequence[str]) -> InvalidInputError:
    """The refusal of a ``main_agent`` that is none of the world's agents, naming those it has."""
    known = f"agents: {', '.join(agents)}" if agents else "it has no agents yet"
    return InvalidInputError(f"main_agent: world {world!r} has no agent {name!r} ({known})")


class WholeWorldChanges:
    """``AgentWorld``'s change of a whole world (mixed into ``WorldCatalog``)."""

    storage: SQLStorage
    _tools: tuple[Tool, ...]
    _runtimes: dict[str, WorldRuntime]

    if TYPE_CHECKING:

        def _check_agent(self, agent: Agent) -> None: ...

        async def _announce(self, event: CrudEvent) -> None: ...

    async def apply_world(
        self,
        world: World,
        *,
        create: bool,
        created: Sequence[Agent] = (),
        updated: Sequence[Agent] = (),
        deleted: Sequence[str] = (),
    ) -> World:
        """Store ``world``'s settings (a new world when ``create``) and create, change and
        delete its agents, all in one transaction: refused anywhere, nothing changes. Checked
        first as ``create_world``/``create_agent``/``update_agent`` check: the settings, each
        new agent's name, the provider settings, and ``main_agent`` against the agents the
        world will have (stored with that agent's spelling). An existing world keeps its
        current chat; each change is announced once committed."""
        check_world_settings(world, extra_tools=self._tools)
        for agent in created:
            if (problem := agent_name_problem(agent.name)) is not None:
                raise InvalidInputError(f"invalid name {agent.name!r}: {problem}")
        for agent in (*created, *updated):
            self._check_agent(agent)
        current = None if create else await self.storage.get_world(world.name)
        stored = [] if create else await self.storage.list_agents(world.name)
        gone = {name.lower() for name in deleted}
        names = [a.name for a in stored if a.name.lower() not in gone] + [a.name for a in created]
        if world.main_agent:
            main = next((n for n in names if n.lower() == world.main_agent.lower()), None)
            if main is None:
                raise no_such_agent(world.name, world.main_agent, names)
            world = world.model_copy(update={"main_agent": main})
        if current is not None:
            world = world.model_copy(update={k: getattr(current, k) for k in _STATE})
        changes = WorldChanges(world, create, tuple(created), tuple(updated), tuple(deleted))
        world, removed = await self.storage.change_world(changes)
        await self._announce_changes(world, current, stored, changes, removed)
        return world

    async def _announce_changes(
        self,
        world: World,
        current: World | None,
        stored: Sequence[Agent],
        changes: WorldChanges,
        removed: Sequence[str],
    ) -> None:
        name = world.name
        if current is None:
            await self._announce(CrudEvent(world=name, operation="create", entity="world", name=name))
        else:
            fields = _differing(current, world, World)
            if fields:
                data = changed_fields(world_doc(world), World, fields)
                await self._announce(CrudEvent(world=name, operation="update", entity="world", name=name, data=data))
        before = {a.name.lower(): a for a in stored}
        for agent in changes.created:
            note_key_variable(agent.api_key_env)  # withheld from tools and masked from now on
            await self._announce(CrudEvent(world=name, operation="create", entity="agent", name=agent.name))
        for agent in changes.updated:
            note_key_variable(agent.api_key_env)
            old = before.get(agent.name.lower())
            fields = _differing(old, agent, Agent) if old is not None else []
            data = changed_fields(agent_doc(agent), Agent, fields)
            await self._announce(CrudEvent(world=name, operation="update", entity="agent", name=agent.name, data=data))
        runtime = self._runtimes.get(name)
        for agent_name in removed:
            if runtime is not None:
                runtime.forget_agent(agent_name)
            await self._announce(CrudEvent(world=name, operation="delete", entity="agent", name=agent_name))


def _differing(old: Any, new: Any, model: type[World] | type[Agent]) -> list[str]:
    return [k for k in model.model_fields if k not in _STATE and getattr(old, k) != getattr(new, k)]
