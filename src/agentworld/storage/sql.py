"""The SQL store: one class, portable SQL, append-only message writes.

SQLite specifics live in ``_configure_sqlite``: WAL mode and a busy timeout so
two processes can share one file, and ``BEGIN IMMEDIATE`` for write
transactions so a writer waits for the lock up front instead of failing half way
with "database is locked". Writes inside one process are serialised by an
``asyncio.Lock`` as well, because SQLite allows one writer at a time anyway and
queueing in Python is cheaper than spinning in the busy handler.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from agentworld.errors import AlreadyExistsError, NotFoundError, StorageError
from agentworld.models import Agent, Chat, Message, Usage, World, utc_now
from agentworld.models.events import MessageEvent, WorldEvent
from agentworld.storage import migrations, schema
from agentworld.storage.approvals import ApprovalStore
from agentworld.storage.pending import PendingCallStore
from agentworld.storage.rows import (
    agent_config,
    message_row,
    row_agent,
    row_message,
    row_world,
    ts,
)
from agentworld.storage.tool_logs import ToolLogStore
from agentworld.storage.url import resolve_database_url, sqlite_file

BUSY_TIMEOUT_MS = 30_000
_WRITE = {"agentworld_write": True}


def _configure_sqlite(engine: AsyncEngine) -> None:
    @sa_event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from the driver so "begin" below decides.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @sa_event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        write = conn.get_execution_options().get("agentworld_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


class SQLStorage:
    """All persistent state of Agent World, behind plain async methods."""

    def __init__(self, url: str | None = None, *, echo: bool = False) -> None:
        self.url = resolve_database_url(url)
        self._engine: AsyncEngine | None = None
        self._echo = echo
        self._write_lock = asyncio.Lock()
        self._is_sqlite = self.url.startswith("sqlite")
        self.pending = PendingCallStore(self)
        self.approvals = ApprovalStore(self)
        self.tool_logs = ToolLogStore(self)

    # -- lifecycle ---------------------------------------------------------

    async def open(self) -> SQLStorage:
        """Connect and bring the schema up to date (SPEC: older databases are upgraded)."""
        path = sqlite_file(self.url)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(
                    f"cannot create database directory {path.parent}: {exc}"
                ) from exc
        engine = create_async_engine(self.url, echo=self._echo)
        if self._is_sqlite:
            _configure_sqlite(engine)
        self._engine = engine
        try:
            async with self._write() as conn:
                await conn.run_sync(migrations.upgrade)
        except BaseException:
            await engine.dispose()
            self._engine = None
            raise
        return self

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

    async def __aenter__(self) -> SQLStorage:
        return await self.open()

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    @property
    def engine(self) -> AsyncEngine:
        if self._engine is None:
            raise StorageError("storage is not open")
        return self._engine

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        """One write transaction; commits on success, rolls back on any error."""
        async with self._write_lock:
            try:
                async with self.engine.connect() as conn:
                    conn = await conn.execution_options(**_WRITE)
                    async with conn.begin():
                        yield conn
            except IntegrityError:
                raise
            except DBAPIError as exc:
                # The driver's own message is one line; SQLAlchemy's adds the SQL and a link.
                raise StorageError(f"database error ({self._where()}): {exc.orig}") from exc
            except SQLAlchemyError as exc:
                raise StorageError(f"database error ({self._where()}): {exc}") from exc

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        try:
            async with self.engine.connect() as conn:
                yield conn
        except DBAPIError as exc:
            raise StorageError(f"database error ({self._where()}): {exc.orig}") from exc

    def _where(self) -> str:
        path = sqlite_file(self.url)
        return str(path) if path else self.url.split("@")[-1]

    # -- worlds ------------------------------------------------------------

    async def create_world(self, world: World) -> World:
        row = {
            "name": world.name,
            "config": world.model_dump(mode="json", exclude={"name", "created_at", "updated_at"}),
            "created_at": ts(world.created_at),
            "updated_at": ts(world.updated_at),
        }
        try:
            async with self._write() as conn:
                await conn.execute(sa.insert(schema.worlds).values(row))
        except IntegrityError as exc:
            raise AlreadyExistsError(f"world {world.name!r} already exists") from exc
        return world

    async def get_world(self, name: str) -> World:
        async with self._read() as conn:
            row = (
                await conn.execute(sa.select(schema.worlds).where(schema.worlds.c.name == name))
            ).first()
        if row is None:
            raise NotFoundError(f"world {name!r} not found")
        return row_world(row)

    async def list_worlds(self) -> list[World]:
        async with self._read() as conn:
            rows = (
                await conn.execute(sa.select(schema.worlds).order_by(schema.worlds.c.name))
            ).all()
        return [row_world(r) for r in rows]

    async def update_world(self, world: World) -> World:
        world = world.model_copy(update={"updated_at": utc_now()})
        config = world.model_dump(mode="json", exclude={"name", "created_at", "updated_at"})
        async with self._write() as conn:
            result = await conn.execute(
                sa.update(schema.worlds)
                .where(schema.worlds.c.name == world.name)
                .values(config=config, updated_at=ts(world.updated_at))
            )
            if result.rowcount == 0:
                raise NotFoundError(f"world {world.name!r} not found")
        return world

    async def delete_world(self, name: str) -> None:
        """Delete a world and everything in it, in one transaction."""
        async with self._write() as conn:
            for table in (
                schema.audit_log,
                schema.approval_grants,
                schema.pending_calls,
                schema.tool_logs,
                schema.events,
                schema.messages,
                schema.chats,
                schema.agents,
            ):
                await conn.execute(sa.delete(table).where(table.c.world == name))
            result = await conn.execute(
                sa.delete(schema.worlds).where(schema.worlds.c.name == name)
            )
            if result.rowcount == 0:
                raise NotFoundError(f"world {name!r} not found")

    # -- agents ------------------------------------------------------------

    async def create_agent(self, agent: Agent) -> Agent:
        await self.get_world(agent.world)
        row = {
            "world": agent.world,
            "name": agent.name,
            "config": agent_config(agent),
            "llm_call_count": agent.llm_call_count,
            "last_active": ts(agent.last_active),
            "created_at": ts(agent.created_at),
        }
        try:
            async with self._write() as conn:
                existing = await conn.execute(
                    sa.select(schema.agents.c.name).where(
                        schema.agents.c.world == agent.world,
                        sa.func.lower(schema.agents.c.name) == agent.name.lower(),
                    )
                )
                if existing.first() is not None:
                    raise AlreadyExistsError(
                        f"agent {agent.name!r} already exists in world {agent.world!r}"
                    )
                await conn.execute(sa.insert(schema.agents).values(row))
        except IntegrityError as exc:
            raise AlreadyExistsError(
                f"agent {agent.name!r} already exists in world {agent.world!r}"
            ) from exc
        return agent

    async def get_agent(self, world: str, name: str) -> Agent:
        """Agent names are matched case-insensitively, like mentions (SPEC R1)."""
        async with self._read() as conn:
            row = (
                await conn.execute(
                    sa.select(schema.agents).where(
                        schema.agents.c.world == world,
                        sa.func.lower(schema.agents.c.name) == name.lower(),
                    )
                )
            ).first()
        if row is None:
            await self.get_world(world)
            raise NotFoundError(f"agent {name!r} not found in world {world!r}")
        return row_agent(row)

    async def world_and_agents(self, name: str) -> tuple[World, list[Agent]]:
        """The world's settings and its agents from one read (used for every routed message)."""
        async with self._read() as conn:
            row = (
                await conn.execute(sa.select(schema.worlds).where(schema.worlds.c.name == name))
            ).first()
            if row is None:
                raise NotFoundError(f"world {name!r} not found")
            rows = (
                await conn.execute(
                    sa.select(schema.agents)
                    .where(schema.agents.c.world == name)
                    .order_by(schema.agents.c.created_at, schema.agents.c.name)
                )
            ).all()
        return row_world(row), [row_agent(r) for r in rows]

    async def agent_and_memory(
        self, world: str, agent: str, chat_id: str
    ) -> tuple[Agent, list[Message]]:
        """Fresh agent settings and its memory for one chat, from one consistent read (R5)."""
        table = schema.messages
        async with self._read() as conn:
            row = (
                await conn.execute(
                    sa.select(schema.agents).where(
                        schema.agents.c.world == world, schema.agents.c.name == agent
                    )
                )
            ).first()
            if row is None:
                raise NotFoundError(f"agent {agent!r} not found in world {world!r}")
            rows = (
                await conn.execute(
                    sa.select(table)
                    .where(
                        table.c.world == world,
                        table.c.chat_id == chat_id,
                        table.c.memory_owner == agent,
                    )
                    .order_by(table.c.seq)
                )
            ).all()
        return row_agent(row), [row_message(r) for r in rows]

    async def list_agents(self, world: str) -> list[Agent]:
        async with self._read() as conn:
            rows = (
                await conn.execute(
                    sa.select(schema.agents)
                    .where(schema.agents.c.world == world)
                    .order_by(schema.agents.c.created_at, schema.agents.c.name)
                )
            ).all()
        return [row_agent(r) for r in rows]

    async def update_agent(self, agent: Agent) -> Agent:
        async with self._write() as conn:
            result = await conn.execute(
                sa.update(schema.agents)
                .where(schema.agents.c.world == agent.world, schema.agents.c.name == agent.name)
                .values(config=agent_config(agent))
            )
            if result.rowcount == 0:
                raise NotFoundError(f"agent {agent.name!r} not found in world {agent.world!r}")
        return agent

    async def delete_agent(self, world: str, name: str) -> None:
        agent = await self.get_agent(world, name)
        async with self._write() as conn:
            await conn.execute(
                sa.delete(schema.agents).where(
                    schema.agents.c.world == world, schema.agents.c.name == agent.name
                )
            )

    async def add_llm_call(self, world: str, agent: str) -> int:
        """Count one LLM call for the agent (SPEC R4) and return the new count."""
        table = schema.agents
        async with self._write() as conn:
            result = await conn.execute(
                sa.update(table)
                .where(table.c.world == world, table.c.name == agent)
                .values(llm_call_count=table.c.llm_call_count + 1, last_active=ts(utc_now()))
                .returning(table.c.llm_call_count)
            )
            count = result.scalar()
        if count is None:
            raise NotFoundError(f"agent {agent!r} not found in world {world!r}")
        return int(count)

    async def record_agent_step(
        self, world: str, agent: str, messages: Sequence[Message], *, llm_calls: int = 0
    ) -> None:
        """Append one loop step to the agent's memory and count its LLM call, atomically (O3)."""
        table = schema.agents
        async with self._write() as conn:
            if messages:
                await conn.execute(
                    sa.insert(schema.messages), [message_row(world, agent, m) for m in messages]
                )
            if llm_calls:
                await conn.execute(
                    sa.update(table)
                    .where(table.c.world == world, table.c.name == agent)
                    .values(
                        llm_call_count=table.c.llm_call_count + llm_calls,
                        last_active=ts(utc_now()),
                    )
                )

    async def reset_llm_calls(self, world: str) -> None:
        """Human and world messages give every agent a fresh turn budget (SPEC R4)."""
        table = schema.agents
        async with self._write() as conn:
            await conn.execute(
                sa.update(table)
                .where(table.c.world == world, table.c.llm_call_count != 0)
                .values(llm_call_count=0)
            )

    # -- chats -------------------------------------------------------------

    async def create_chat(self, chat: Chat) -> Chat:
        await self.get_world(chat.world)
        try:
            async with self._write() as conn:
                await conn.execute(
                    sa.insert(schema.chats).values(
                        world=chat.world,
                        chat_id=chat.chat_id,
                        name=chat.name,
                        created_at=ts(chat.created_at),
                        updated_at=ts(chat.updated_at),
                    )
                )
        except IntegrityError as exc:
            raise AlreadyExistsError(
                f"chat {chat.chat_id!r} already exists in world {chat.world!r}"
            ) from exc
        return chat

    async def get_chat(self, world: str, chat_id: str) -> Chat:
        for chat in await self.list_chats(world, chat_id=chat_id):
            return chat
        raise NotFoundError(f"chat {chat_id!r} not found in world {world!r}")

    async def list_chats(self, world: str, *, chat_id: str | None = None) -> list[Chat]:
        counts = (
            sa.select(sa.func.count())
            .where(
                schema.messages.c.world == schema.chats.c.world,
                schema.messages.c.chat_id == schema.chats.c.chat_id,
                schema.messages.c.memory_owner.is_(None),
            )
            .scalar_subquery()
        )
        query = sa.select(schema.chats, counts.label("message_count")).where(
            schema.chats.c.world == world
        )
        if chat_id is not None:
            query = query.where(schema.chats.c.chat_id == chat_id)
        async with self._read() as conn:
            rows = (await conn.execute(query.order_by(schema.chats.c.created_at))).all()
        return [
            Chat(
                world=r.world,
                chat_id=r.chat_id,
                name=r.name,
                created_at=datetime.fromisoformat(r.created_at),
                updated_at=datetime.fromisoformat(r.updated_at),
                message_count=r.message_count,
            )
            for r in rows
        ]

    async def rename_chat(
        self, world: str, chat_id: str, name: str, *, titled: bool = True
    ) -> None:
        async with self._write() as conn:
            await conn.execute(
                sa.update(schema.chats)
                .where(schema.chats.c.world == world, schema.chats.c.chat_id == chat_id)
                .values(name=name, titled=titled, updated_at=ts(utc_now()))
            )

    async def chat_is_titled(self, world: str, chat_id: str) -> bool:
        async with self._read() as conn:
            value = (
                await conn.execute(
                    sa.select(schema.chats.c.titled).where(
                        schema.chats.c.world == world, schema.chats.c.chat_id == chat_id
                    )
                )
            ).scalar()
        return bool(value)

    # -- messages ----------------------------------------------------------

    async def append_messages(
        self, world: str, entries: Iterable[tuple[str | None, Message]]
    ) -> None:
        """Append messages, each to the transcript (owner None) or an agent's memory.

        One transaction for the batch, so a step's messages land together or not at all.
        """
        rows = [message_row(world, owner, message) for owner, message in entries]
        if not rows:
            return
        async with self._write() as conn:
            await conn.execute(sa.insert(schema.messages), rows)

    async def transcript(self, world: str, chat_id: str) -> list[Message]:
        return await self._messages(world, chat_id, owner=None)

    async def memory(self, world: str, agent: str, chat_id: str | None = None) -> list[Message]:
        return await self._messages(world, chat_id, owner=agent)

    async def _messages(
        self, world: str, chat_id: str | None, *, owner: str | None
    ) -> list[Message]:
        table = schema.messages
        query = sa.select(table).where(table.c.world == world)
        if chat_id is not None:
            query = query.where(table.c.chat_id == chat_id)
        query = query.where(
            table.c.memory_owner.is_(None) if owner is None else table.c.memory_owner == owner
        )
        async with self._read() as conn:
            rows = (await conn.execute(query.order_by(table.c.seq))).all()
        return [row_message(r) for r in rows]

    async def messages_since(self, world: str, chat_id: str, after_seq: int) -> list[Message]:
        """Transcript messages appended after a known position (what a command produced)."""
        table = schema.messages
        query = (
            sa.select(table)
            .where(
                table.c.world == world,
                table.c.chat_id == chat_id,
                table.c.memory_owner.is_(None),
                table.c.seq > after_seq,
            )
            .order_by(table.c.seq)
        )
        async with self._read() as conn:
            rows = (await conn.execute(query)).all()
        return [row_message(r) for r in rows]

    async def last_seq(self) -> int:
        async with self._read() as conn:
            return int(
                (await conn.execute(sa.select(sa.func.max(schema.messages.c.seq)))).scalar() or 0
            )

    async def usage_by_agent(self, world: str) -> dict[str, Usage]:
        return await self._usage(world, group=schema.messages.c.memory_owner)

    async def usage_by_chat(self, world: str) -> dict[str, Usage]:
        return await self._usage(world, group=schema.messages.c.chat_id)

    async def _usage(self, world: str, *, group: sa.ColumnElement[Any]) -> dict[str, Usage]:
        table = schema.messages
        query = (
            sa.select(
                group,
                sa.func.coalesce(sa.func.sum(table.c.input_tokens), 0),
                sa.func.coalesce(sa.func.sum(table.c.output_tokens), 0),
            )
            .where(table.c.world == world, table.c.memory_owner.is_not(None))
            .group_by(group)
        )
        async with self._read() as conn:
            rows = (await conn.execute(query)).all()
        return {key: Usage(input_tokens=int(i), output_tokens=int(o)) for key, i, o in rows}

    # -- events ------------------------------------------------------------

    async def append_events(self, events: Sequence[WorldEvent]) -> None:
        """Store events for the event log; message events land in the transcript instead."""
        transcript = [(None, e.message) for e in events if isinstance(e, MessageEvent)]
        others = [
            {
                "world": e.world,
                "chat_id": e.chat,
                "kind": e.kind,
                "payload": e.model_dump(mode="json", by_alias=True),
                "created_at": ts(e.created_at),
            }
            for e in events
            if not isinstance(e, MessageEvent)
        ]
        if not transcript and not others:
            return
        world = events[0].world
        async with self._write() as conn:
            if transcript:
                await conn.execute(
                    sa.insert(schema.messages), [message_row(world, o, m) for o, m in transcript]
                )
            if others:
                await conn.execute(sa.insert(schema.events), others)

    async def list_events(
        self, world: str, *, kind: str | None = None, chat_id: str | None = None
    ) -> list[dict[str, Any]]:
        table = schema.events
        query = sa.select(table.c.payload).where(table.c.world == world)
        if kind is not None:
            query = query.where(table.c.kind == kind)
        if chat_id is not None:
            query = query.where(table.c.chat_id == chat_id)
        async with self._read() as conn:
            return [row.payload for row in await conn.execute(query.order_by(table.c.seq))]
