"""Worlds, agents and chats: the catalog part of the SQL store (mixed into ``SQLStorage``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from agentworld.errors import AlreadyExistsError, BusyError, NotFoundError
from agentworld.models import Agent, Chat, Message, World, utc_now
from agentworld.models.domain import BranchOf
from agentworld.models.records import AuditEntry
from agentworld.storage import queries
from agentworld.storage.approvals import INSERT_AUDIT, audit_row, revoke_session_grants
from agentworld.storage.connection import Connection
from agentworld.storage.core import StorageCore
from agentworld.storage.inbox import take_agent_work
from agentworld.storage.leases import chats_in_use
from agentworld.storage.pending import cancel_agent_calls
from agentworld.storage.rows import (
    agent_config,
    row_agent,
    row_world,
    ts,
)
from agentworld.storage.statement import Sql

_ALL_WORLDS = Sql(f"SELECT {queries.WORLD_COLUMNS} FROM worlds ORDER BY worlds.name")
"""The CLI resolves a world's spelling with it."""
_WORLD_NAMES = Sql("SELECT name FROM worlds ORDER BY name")
_WORLD_NAMED = Sql("SELECT name FROM worlds WHERE lower(name) = :name_key")
"""The world whose name is ``name_key`` in any case."""
_WORLD_SETTINGS = Sql(
    "SELECT config FROM worlds WHERE name = :world_key", columns={"config": "json"}
)
_AGENT_NAMED = Sql("SELECT name FROM agents WHERE world = :world_key AND lower(name) = :agent_key")
"""The stored name of the agent whose name is ``agent_key`` in any case."""
_UPDATE_AGENT = Sql(
    "UPDATE agents SET config = :config WHERE world = :world_key AND name = :agent_key",
    json_params=("config",),
)
_ADD_LLM_CALL = Sql(
    "UPDATE agents SET llm_call_count = llm_call_count + 1, last_active = :now"
    " WHERE world = :world_key AND name = :agent_key RETURNING llm_call_count"
)
_DELETE_MEMORY = Sql("DELETE FROM messages WHERE world = :world_key AND memory_owner = :agent_key")
_DELETE_AGENT = Sql("DELETE FROM agents WHERE world = :world_key AND name = :agent_key")
WORLD_TABLES: Final = (
    "audit_log",
    "approval_grants",
    "pending_calls",
    "tool_logs",
    "events",
    "chat_inbox",
    "chat_leases",
    "messages",
    "chats",
    "agents",
)
"""The tables of a world's rows, deleted with it before its own row: every table with a
``world`` column (a test holds the list to the schema, so a table added later is not missed)."""
_DELETE_WORLD_ROWS: Final = tuple(
    Sql(f"DELETE FROM {table} WHERE world = :world_key") for table in WORLD_TABLES
)
_DELETE_WORLD = Sql("DELETE FROM worlds WHERE name = :world_key")

CHAT_TABLES: Final = (
    "chat_inbox",
    "chat_leases",
    "chats",
    "events",
    "messages",
    "pending_calls",
    "tool_logs",
)
"""The tables of a chat's rows, deleted with it: every table with ``world`` and ``chat_id``
columns (``schema._chat_of_world``; a test holds the list to the schema) but those whose rows
outlive a deleted chat -- ``audit_log`` and ``approval_grants``: what was approved, and by
whom, stays on record."""
_DELETE_CHAT_ROWS: Final = tuple(
    (table, Sql(f"DELETE FROM {table} WHERE world = :world_key AND chat_id = :chat_key"))
    for table in CHAT_TABLES
)
_REVOKE_CHAT_GRANTS = Sql(
    "UPDATE approval_grants SET revoked_at = :now"
    " WHERE world = :world_key AND chat_id = :chat_key AND revoked_at IS NULL"
)
"""The chat's grants in force revoked, not deleted: the audit log refers to them."""


NAME_LOCK_CLASS = 0x6177_6E6D
"""The first key of the advisory locks on names (``'awnm'``), apart from the event log's."""
_LOCK_NAME = Sql("SELECT pg_advisory_xact_lock(:lock_class, hashtext(:name_key))")


def lock_name(conn: Connection, kind: str, name: str) -> None:
    """On PostgreSQL, wait until no other open transaction creates a ``kind`` of this name, in
    any case, and keep them out until this one ends: a check for the name made after it sees
    every such row committed (READ COMMITTED reads afresh at each statement). A no-op on
    SQLite, whose write transactions run one at a time (``BEGIN IMMEDIATE``)."""
    if conn.backend != "postgresql":
        return
    conn.execute(_LOCK_NAME, {"lock_class": NAME_LOCK_CLASS, "name_key": f"{kind}:{name.lower()}"})


def insert_world(conn: Connection, world: World) -> None:
    """Inside the caller's transaction: store a new world. Names are one name whatever their
    case, and the check must be atomic with the insert: two requests for "csb2" and "CSB2" at
    once would both pass a check made before (SQLite serialises write transactions;
    PostgreSQL takes a lock)."""
    row = {
        "name": world.name,
        "config": world.model_dump(mode="json", exclude={"name", "created_at", "updated_at"}),
        "created_at": ts(world.created_at),
        "updated_at": ts(world.updated_at),
    }
    lock_name(conn, "world", world.name)
    existing = conn.execute(_WORLD_NAMED, {"name_key": world.name.lower()}).scalar()
    if existing is not None:
        same = "" if existing == world.name else " (names are unique regardless of case)"
        raise AlreadyExistsError(f"world {existing!r} already exists{same}")
    conn.execute(queries.INSERT_WORLD, row)


def write_world(conn: Connection, world: World) -> None:
    """Inside the caller's transaction: store a world's changed settings."""
    config = world.model_dump(mode="json", exclude={"name", "created_at", "updated_at"})
    result = conn.execute(
        queries.UPDATE_WORLD,
        {"world_key": world.name, "new_config": config, "new_updated_at": ts(world.updated_at)},
    )
    if result.rowcount == 0:
        raise NotFoundError(f"world {world.name!r} not found")


def insert_agent(conn: Connection, agent: Agent) -> None:
    """Inside the caller's transaction: store a new agent of an existing world, its name
    unique in the world regardless of case (checked under a lock, as a world's is)."""
    row = {
        "world": agent.world,
        "name": agent.name,
        "config": agent_config(agent),
        "llm_call_count": agent.llm_call_count,
        "last_active": ts(agent.last_active),
        "created_at": ts(agent.created_at),
    }
    queries.require_world(conn, agent.world)
    lock_name(conn, "agent", f"{agent.world}/{agent.name}")
    params = {"world_key": agent.world, "agent_key": agent.name.lower()}
    if conn.execute(_AGENT_NAMED, params).first() is not None:
        raise AlreadyExistsError(f"agent {agent.name!r} already exists in world {agent.world!r}")
    conn.execute(queries.INSERT_AGENT, row)


def write_agent(conn: Connection, agent: Agent) -> None:
    """Inside the caller's transaction: store an agent's changed settings."""
    params = {"world_key": agent.world, "agent_key": agent.name, "config": agent_config(agent)}
    if conn.execute(_UPDATE_AGENT, params).rowcount == 0:
        raise NotFoundError(f"agent {agent.name!r} not found in world {agent.world!r}")


def remove_agent(conn: Connection, world: str, name: str, actor: str) -> str:
    """Inside the caller's transaction: delete an agent and everything that was only its own:
    its memory, its session grants, its queued work, and its waiting calls and approvals, which
    are cancelled (each with an audit entry) so answering one later is refused and nothing
    runs. A new agent of the same name starts from nothing. Refused (``BusyError``) while a
    process is running the agent's work: it would write the answer into the memory (and the
    usage) a new agent of that name would then start from. Returns the stored name."""
    found = conn.execute(_AGENT_NAMED, {"world_key": world, "agent_key": name.lower()}).scalar()
    if found is None:
        queries.require_world(conn, world)
        raise NotFoundError(f"agent {name!r} not found in world {world!r}")
    if running := take_agent_work(conn, world, found, set(chats_in_use(conn, world))):
        raise BusyError(
            f"agent {found!r} is answering in chat {', '.join(running)} now: retry when"
            " it has finished (or stop that chat's work)"
        )
    reason = f"agent {found!r} was deleted"
    cancelled = cancel_agent_calls(conn, world, found, reason=reason, actor=actor)
    revoked = revoke_session_grants(conn, world, found)
    params = {"world_key": world, "agent_key": found}
    conn.execute(_DELETE_MEMORY, params)
    conn.execute(_DELETE_AGENT, params)
    detail = {"cancelled": cancelled, "sessionGrantsRevoked": revoked}
    entry = audit_row(world, AuditEntry(event="agent_deleted", actor=actor, agent=found, detail=detail))
    conn.execute(INSERT_AUDIT, entry)
    return str(found)


class CatalogStore(StorageCore):
    async def create_world(self, world: World) -> World:
        await self.in_transaction(
            lambda conn: insert_world(conn, world), write=True, duplicate=f"world {world.name!r} already exists"
        )
        return world

    async def get_world(self, name: str) -> World:
        def read(conn: Connection) -> World:
            row = conn.execute(queries.WORLD, {"world_key": name}).first()
            if row is None:
                raise NotFoundError(f"world {name!r} not found")
            return row_world(row)

        return await self.in_transaction(read, write=False)

    async def list_worlds(self) -> list[World]:
        def read(conn: Connection) -> list[World]:
            rows = conn.execute(_ALL_WORLDS)
            return [row_world(r) for r in rows]

        return await self.in_transaction(read, write=False)

    async def world_names(self) -> list[str]:
        def read(conn: Connection) -> list[str]:
            return [name for (name,) in conn.execute(_WORLD_NAMES)]

        return await self.in_transaction(read, write=False)

    async def update_world(self, world: World) -> World:
        world = world.model_copy(update={"updated_at": utc_now()})
        await self.in_transaction(lambda conn: write_world(conn, world), write=True)
        return world

    async def delete_world(self, name: str) -> None:
        """Delete a world and everything in it, in one transaction. Refused (``BusyError``)
        while a process is running one of its chats: that process would go on writing the
        turn's messages and events into a world that no longer exists, where a world created
        later under the same name would find them. The check and the delete are one
        transaction: SQLite serialises it with every claim; on PostgreSQL the chats' rows are
        locked first, as a message posted into a chat locks its row before claiming it."""

        def delete(conn: Connection) -> None:
            conn.execute(queries.LOCK_CHATS_OF_WORLD, {"world_key": name})
            if busy := chats_in_use(conn, name):
                chats = ", ".join(busy[:3]) + (f" and {len(busy) - 3} more" if len(busy) > 3 else "")
                raise BusyError(
                    f"world {name!r} is in use: another process is answering in chat {chats};"
                    " retry when it has finished (or stop that process)"
                )
            # The chats' queued work and leases too: a world created later under the same name
            # must not inherit work (or a lease) of the one deleted.
            params = {"world_key": name}
            for statement in _DELETE_WORLD_ROWS:
                conn.execute(statement, params)
            result = conn.execute(_DELETE_WORLD, params)
            if result.rowcount == 0:
                raise NotFoundError(f"world {name!r} not found")

        await self.in_transaction(delete, write=True)

    async def create_agent(self, agent: Agent) -> Agent:
        taken = f"agent {agent.name!r} already exists in world {agent.world!r}"
        await self.in_transaction(lambda conn: insert_agent(conn, agent), write=True, duplicate=taken)
        return agent

    async def get_agent(self, world: str, name: str) -> Agent:
        """Agent names are matched case-insensitively, like mentions (SPEC R1)."""

        def read(conn: Connection) -> Agent:
            params = {"world_key": world, "agent_key": name.lower()}
            row = conn.execute(queries.AGENT_NAMED, params).first()
            if row is None:
                queries.require_world(conn, world)
                raise NotFoundError(f"agent {name!r} not found in world {world!r}")
            return row_agent(row)

        return await self.in_transaction(read, write=False)

    async def world_and_agents(self, name: str) -> tuple[World, list[Agent]]:
        """The world's settings and its agents from one read (used for every routed message)."""

        def read(conn: Connection) -> tuple[World, list[Agent]]:
            return queries.world_and_agents(conn, name)

        return await self.in_transaction(read, write=False)

    async def list_agents(self, world: str) -> list[Agent]:
        def read(conn: Connection) -> list[Agent]:
            rows = conn.execute(queries.AGENTS_OF_WORLD, {"world_key": world})
            return [row_agent(r) for r in rows]

        return await self.in_transaction(read, write=False)

    async def update_agent(self, agent: Agent) -> Agent:
        await self.in_transaction(lambda conn: write_agent(conn, agent), write=True)
        return agent

    async def delete_agent(self, world: str, name: str, *, actor: str = "human") -> str:
        """Delete an agent and everything that was only its own, in one transaction
        (``remove_agent``). Returns the stored name."""
        return await self.in_transaction(lambda conn: remove_agent(conn, world, name, actor), write=True)

    async def add_llm_call(self, world: str, agent: str) -> int:
        """Count one LLM call for the agent (SPEC R4) and return the new count."""

        def update(conn: Connection) -> Any:
            params = {"world_key": world, "agent_key": agent, "now": ts(utc_now())}
            return conn.execute(_ADD_LLM_CALL, params).scalar()

        count = await self.in_transaction(update, write=True)
        if count is None:
            raise NotFoundError(f"agent {agent!r} not found in world {world!r}")
        return int(count)

    async def create_chat(self, chat: Chat) -> Chat:
        row = {
            "world": chat.world,
            "chat_id": chat.chat_id,
            "name": chat.name,
            "created_at": ts(chat.created_at),
            "updated_at": ts(chat.updated_at),
        }

        def insert(conn: Connection) -> None:
            queries.require_world(conn, chat.world)
            conn.execute(queries.INSERT_CHAT, row)

        taken = f"chat {chat.chat_id!r} already exists in world {chat.world!r}"
        await self.in_transaction(insert, write=True, duplicate=taken)
        return chat

    async def get_chat(self, world: str, chat_id: str) -> Chat:
        for chat in await self.list_chats(world, chat_id=chat_id):
            return chat
        raise NotFoundError(f"chat {chat_id!r} not found in world {world!r}")

    async def chat_exists(self, world: str, chat_id: str) -> bool:
        """Whether the world has this chat (one indexed lookup, no message count)."""

        def read(conn: Connection) -> bool:
            params = {"world_key": world, "chat_key": chat_id}
            return conn.execute(queries.CHAT_EXISTS, params).first() is not None

        return await self.in_transaction(read, write=False)

    async def list_chats(self, world: str, *, chat_id: str | None = None) -> list[Chat]:
        query = queries.CHATS_OF_WORLD if chat_id is None else queries.CHAT
        params = {"world_key": world, "chat_key": chat_id}

        def read(conn: Connection) -> list[Chat]:
            return [
                Chat(
                    world=r.world,
                    chat_id=r.chat_id,
                    name=r.name,
                    created_at=datetime.fromisoformat(r.created_at),
                    updated_at=datetime.fromisoformat(r.updated_at),
                    message_count=r.message_count,
                    branch_of=(
                        BranchOf(chat_id=r.branch_of, message_id=r.branch_message)
                        if r.branch_of is not None
                        else None
                    ),
                )
                for r in conn.execute(query, params)
            ]

        return await self.in_transaction(read, write=False)

    async def rename_chat(
        self, world: str, chat_id: str, name: str, *, titled: bool = True
    ) -> None:
        def update(conn: Connection) -> None:
            queries.rename_chat(conn, world, chat_id, name, titled=titled)

        await self.in_transaction(update, write=True)

    async def untitled_chat(self, world: str, chat_id: str) -> tuple[list[Message], list[Agent]] | None:
        """What naming a chat needs -- its transcript and the world's agents -- or None once it
        has its title; one read (the title step runs once per chat, after its first turn)."""
        return await self.in_transaction(lambda conn: queries.untitled(conn, world, chat_id), write=False)

    async def delete_chat(self, world: str, chat_id: str, *, actor: str = "human") -> None:
        """Delete a chat and every row kept for it, in one transaction: its transcript and
        memories, events, tool logs, waiting calls and queued work — every table with a
        ``chat_id`` column (``CHAT_TABLES``). Its session grants are revoked, not deleted, and
        the audit log keeps its entries and records the deletion. If it was the world's
        current chat, the world has none until the next one."""

        def delete(conn: Connection) -> None:
            params = {"world_key": world, "chat_key": chat_id}
            if conn.execute(queries.CHAT_EXISTS, params).first() is None:
                queries.require_world(conn, world)
                raise NotFoundError(f"chat {chat_id!r} not found in world {world!r}")
            removed: dict[str, int] = {}
            for table, statement in _DELETE_CHAT_ROWS:
                removed[table] = int(conn.execute(statement, params).rowcount or 0)
            conn.execute(_REVOKE_CHAT_GRANTS, {**params, "now": utc_now().isoformat()})
            _forget_current_chat(conn, world, chat_id)
            detail = {"deleted": {k: v for k, v in removed.items() if v}}
            entry = audit_row(
                world, AuditEntry(event="chat_deleted", actor=actor, chat_id=chat_id, detail=detail)
            )
            conn.execute(INSERT_AUDIT, entry)

        await self.in_transaction(delete, write=True)


def _forget_current_chat(conn: Connection, world: str, chat_id: str) -> None:
    row = conn.execute(_WORLD_SETTINGS, {"world_key": world}).first()
    if row is not None and row.config.get("current_chat_id") == chat_id:
        config = {**row.config, "current_chat_id": None}
        params = {"world_key": world, "new_config": config, "new_updated_at": ts(utc_now())}
        conn.execute(queries.UPDATE_WORLD, params)
