"""A world's settings and its agents changed in one transaction: a world file's plan
(``agentworld apply``) is stored whole or, refused anywhere, not at all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentworld.models import Agent, World, utc_now
from agentworld.storage.catalog import (
    insert_agent,
    insert_world,
    remove_agent,
    write_agent,
    write_world,
)
from agentworld.storage.connection import Connection
from agentworld.storage.core import StorageCore


@dataclass(frozen=True)
class WorldChanges:
    """What one transaction stores: the world's settings (a new world when ``create``), the
    agents to create and to change, and the names of those to delete."""

    world: World
    create: bool
    created: Sequence[Agent] = ()
    updated: Sequence[Agent] = ()
    deleted: Sequence[str] = ()


class WorldChangesStore(StorageCore):
    async def change_world(self, changes: WorldChanges, *, actor: str = "human") -> tuple[World, list[str]]:
        """Store ``changes`` in one transaction, each step as the one-by-one methods store it
        (``create_world``, ``create_agent``, ``update_agent``, ``delete_agent``): any refusal
        -- a name taken meanwhile, an agent busy answering -- rolls all of it back. Returns the
        world as stored and the deleted agents' stored names."""
        world = changes.world if changes.create else changes.world.model_copy(update={"updated_at": utc_now()})

        def write(conn: Connection) -> list[str]:
            if changes.create:
                insert_world(conn, world)
            else:
                write_world(conn, world)
            for agent in changes.created:
                insert_agent(conn, agent)
            for agent in changes.updated:
                write_agent(conn, agent)
            return [remove_agent(conn, world.name, name, actor) for name in changes.deleted]

        taken = f"world {world.name!r} or one of its agents was created meanwhile; apply again"
        deleted = await self.in_transaction(write, write=True, duplicate=taken)
        return world, deleted
