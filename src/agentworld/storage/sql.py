"""The SQL store: one class, portable SQL, append-only message writes.

Each public method does its whole job as one synchronous function of a
``sqlalchemy.Connection``, run in one transaction by ``_run`` (see ``engine``:
a worker thread for SQLite, the async engine for PostgreSQL). The functions are
closures so a method reads top to bottom; the SQL inside is the same for both
backends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError

from agentworld.errors import AlreadyExistsError, NotFoundError, StorageError
from agentworld.models import Agent, Chat, Message, Usage, World, utc_now
from agentworld.models.events import MessageEvent, WorldEvent
from agentworld.storage import migrations, queries, schema
from agentworld.storage.approvals import ApprovalStore
from agentworld.storage.engine import Runner, open_runner
from agentworld.storage.pending import PendingCallStore
from agentworld.storage.rows import (
    MESSAGE_COLUMNS,
    agent_config,
    message_row,
    row_agent,
    row_message,
    row_world,
    ts,
)
from agentworld.storage.tool_logs import ToolLogStore
from agentworld.storage.url import resolve_database_url, sqlite_file

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

T = TypeVar("T")

_AGENTS = schema.agents
_CHATS = schema.chats
_MESSAGES = schema.messages
_WORLDS = schema.worlds


class SQLStorage:
    """All persistent state of Agent World, behind plain async methods."""

    def __init__(self, url: str | None = None, *, echo: bool = False) -> None:
        self.url = resolve_database_url(url)
        self._runner: Runner | None = None
        self._echo = echo
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
        runner = open_runner(self.url, echo=self._echo)
        self._runner = runner
        try:
            await self._run(migrations.upgrade, write=True)
        except BaseException:
            self._runner = None
            await runner.close()
            raise
        return self

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.close()

    async def __aenter__(self) -> SQLStorage:
        return await self.open()

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    @property
    def engine(self) -> sa.Engine | AsyncEngine:
        """The SQLAlchemy engine: a sync ``Engine`` for SQLite, an ``AsyncEngine`` otherwise.

        For inspection and tools; storage work itself goes through the methods, in ``_run``.
        """
        if self._runner is None:
            raise StorageError("storage is not open")
        return self._runner.engine

    async def _run(self, fn: Callable[[sa.Connection], T], *, write: bool) -> T:
        """Run one unit of work in one transaction (``BEGIN IMMEDIATE`` for SQLite writes).

        Commits when ``fn`` returns, rolls back when it raises. ``IntegrityError`` reaches the
        caller, which knows what the duplicate means; other database errors become a one-line
        ``StorageError`` naming the database.
        """
        runner = self._runner
        if runner is None:
            raise StorageError("storage is not open")
        try:
            return await runner.run(fn, write=write)
        except IntegrityError:
            raise
        except DBAPIError as exc:
            # The driver's own message is one line; SQLAlchemy's adds the SQL and a link.
            raise StorageError(f"database error ({self._where()}): {exc.orig}") from exc
        except SQLAlchemyError as exc:
            raise StorageError(f"database error ({self._where()}): {exc}") from exc

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

        def insert(conn: sa.Connection) -> None:
            conn.execute(sa.insert(_WORLDS).values(row))

        try:
            await self._run(insert, write=True)
        except IntegrityError as exc:
            raise AlreadyExistsError(f"world {world.name!r} already exists") from exc
        return world

    async def get_world(self, name: str) -> World:
        def read(conn: sa.Connection) -> World:
            row = conn.execute(queries.WORLD, {"world_key": name}).first()
            if row is None:
                raise NotFoundError(f"world {name!r} not found")
            return row_world(row)

        return await self._run(read, write=False)

    async def list_worlds(self) -> list[World]:
        def read(conn: sa.Connection) -> list[World]:
            rows = conn.execute(sa.select(_WORLDS).order_by(_WORLDS.c.name))
            return [row_world(r) for r in rows]

        return await self._run(read, write=False)

    async def update_world(self, world: World) -> World:
        world = world.model_copy(update={"updated_at": utc_now()})
        config = world.model_dump(mode="json", exclude={"name", "created_at", "updated_at"})

        def update(conn: sa.Connection) -> None:
            result = conn.execute(
                sa.update(_WORLDS)
                .where(_WORLDS.c.name == world.name)
                .values(config=config, updated_at=ts(world.updated_at))
            )
            if result.rowcount == 0:
                raise NotFoundError(f"world {world.name!r} not found")

        await self._run(update, write=True)
        return world

    async def delete_world(self, name: str) -> None:
        """Delete a world and everything in it, in one transaction."""

        def delete(conn: sa.Connection) -> None:
            for table in (
                schema.audit_log,
                schema.approval_grants,
                schema.pending_calls,
                schema.tool_logs,
                schema.events,
                _MESSAGES,
                _CHATS,
                _AGENTS,
            ):
                conn.execute(sa.delete(table).where(table.c.world == name))
            result = conn.execute(sa.delete(_WORLDS).where(_WORLDS.c.name == name))
            if result.rowcount == 0:
                raise NotFoundError(f"world {name!r} not found")

        await self._run(delete, write=True)

    # -- agents ------------------------------------------------------------

    async def create_agent(self, agent: Agent) -> Agent:
        row = {
            "world": agent.world,
            "name": agent.name,
            "config": agent_config(agent),
            "llm_call_count": agent.llm_call_count,
            "last_active": ts(agent.last_active),
            "created_at": ts(agent.created_at),
        }
        taken = f"agent {agent.name!r} already exists in world {agent.world!r}"

        def insert(conn: sa.Connection) -> None:
            queries.require_world(conn, agent.world)
            existing = conn.execute(
                sa.select(_AGENTS.c.name).where(
                    _AGENTS.c.world == agent.world,
                    sa.func.lower(_AGENTS.c.name) == agent.name.lower(),
                )
            )
            if existing.first() is not None:
                raise AlreadyExistsError(taken)
            conn.execute(sa.insert(_AGENTS).values(row))

        try:
            await self._run(insert, write=True)
        except IntegrityError as exc:
            raise AlreadyExistsError(taken) from exc
        return agent

    async def get_agent(self, world: str, name: str) -> Agent:
        """Agent names are matched case-insensitively, like mentions (SPEC R1)."""

        def read(conn: sa.Connection) -> Agent:
            row = conn.execute(
                sa.select(_AGENTS).where(
                    _AGENTS.c.world == world, sa.func.lower(_AGENTS.c.name) == name.lower()
                )
            ).first()
            if row is None:
                queries.require_world(conn, world)
                raise NotFoundError(f"agent {name!r} not found in world {world!r}")
            return row_agent(row)

        return await self._run(read, write=False)

    async def world_and_agents(self, name: str) -> tuple[World, list[Agent]]:
        """The world's settings and its agents from one read (used for every routed message)."""

        def read(conn: sa.Connection) -> tuple[World, list[Agent]]:
            row = conn.execute(queries.WORLD, {"world_key": name}).first()
            if row is None:
                raise NotFoundError(f"world {name!r} not found")
            rows = conn.execute(queries.AGENTS_OF_WORLD, {"world_key": name}).all()
            return row_world(row), [row_agent(r) for r in rows]

        return await self._run(read, write=False)

    async def agent_and_memory(
        self, world: str, agent: str, chat_id: str
    ) -> tuple[Agent, list[Message]]:
        """Fresh agent settings and its memory for one chat, from one consistent read (R5)."""

        def read(conn: sa.Connection) -> tuple[Agent, list[Message]]:
            row = conn.execute(queries.AGENT, {"world_key": world, "agent_key": agent}).first()
            if row is None:
                raise NotFoundError(f"agent {agent!r} not found in world {world!r}")
            rows = conn.execute(
                queries.MEMORY, {"world_key": world, "chat_key": chat_id, "agent_key": agent}
            ).all()
            return row_agent(row), [row_message(r) for r in rows]

        return await self._run(read, write=False)

    async def agent_and_memory_since(
        self, world: str, agent: str, chat_id: str, after_seq: int
    ) -> tuple[Agent, list[Message], int]:
        """Fresh agent settings plus its memory of the chat after ``after_seq``, in one read,
        and the position to ask from next time (for callers that keep the earlier part)."""
        params = {
            "world_key": world,
            "chat_key": chat_id,
            "agent_key": agent,
            "after_seq": after_seq,
        }

        def read(conn: sa.Connection) -> tuple[Agent, list[Message], int]:
            row = conn.execute(queries.AGENT, params).first()
            if row is None:
                raise NotFoundError(f"agent {agent!r} not found in world {world!r}")
            rows = conn.execute(queries.MEMORY_SINCE, params).all()
            last = int(rows[-1].seq) if rows else after_seq
            return row_agent(row), [row_message(r) for r in rows], last

        return await self._run(read, write=False)

    @property
    def commits_in_seq_order(self) -> bool:
        """True when rows become visible in ``seq`` order (SQLite's single writer), so a
        reader may keep what it has read and ask only for rows after the last seq it saw."""
        return self.url.startswith("sqlite")

    async def list_agents(self, world: str) -> list[Agent]:
        def read(conn: sa.Connection) -> list[Agent]:
            rows = conn.execute(queries.AGENTS_OF_WORLD, {"world_key": world})
            return [row_agent(r) for r in rows]

        return await self._run(read, write=False)

    async def update_agent(self, agent: Agent) -> Agent:
        config = agent_config(agent)

        def update(conn: sa.Connection) -> None:
            result = conn.execute(
                sa.update(_AGENTS)
                .where(_AGENTS.c.world == agent.world, _AGENTS.c.name == agent.name)
                .values(config=config)
            )
            if result.rowcount == 0:
                raise NotFoundError(f"agent {agent.name!r} not found in world {agent.world!r}")

        await self._run(update, write=True)
        return agent

    async def delete_agent(self, world: str, name: str) -> None:
        def delete(conn: sa.Connection) -> None:
            found = conn.execute(
                sa.select(_AGENTS.c.name).where(
                    _AGENTS.c.world == world, sa.func.lower(_AGENTS.c.name) == name.lower()
                )
            ).scalar()
            if found is None:
                queries.require_world(conn, world)
                raise NotFoundError(f"agent {name!r} not found in world {world!r}")
            conn.execute(
                sa.delete(_AGENTS).where(_AGENTS.c.world == world, _AGENTS.c.name == found)
            )

        await self._run(delete, write=True)

    async def add_llm_call(self, world: str, agent: str) -> int:
        """Count one LLM call for the agent (SPEC R4) and return the new count."""

        def update(conn: sa.Connection) -> Any:
            return conn.execute(
                sa.update(_AGENTS)
                .where(_AGENTS.c.world == world, _AGENTS.c.name == agent)
                .values(llm_call_count=_AGENTS.c.llm_call_count + 1, last_active=ts(utc_now()))
                .returning(_AGENTS.c.llm_call_count)
            ).scalar()

        count = await self._run(update, write=True)
        if count is None:
            raise NotFoundError(f"agent {agent!r} not found in world {world!r}")
        return int(count)

    async def record_agent_step(
        self, world: str, agent: str, messages: Sequence[Message], *, llm_calls: int = 0
    ) -> None:
        """Append one loop step to the agent's memory and count its LLM call, atomically (O3)."""
        await self.record_step_with_transcript(world, agent, messages, (), llm_calls=llm_calls)

    async def record_step_with_transcript(
        self,
        world: str,
        agent: str,
        memory: Sequence[Message],
        transcript: Sequence[Message],
        *,
        llm_calls: int = 0,
    ) -> None:
        """Append a step to the agent's memory and publish messages to the chat transcript,
        counting the step's LLM calls, all in one transaction (O3): the answer is in the
        transcript exactly when it is in the memory."""
        rows = [message_row(world, agent, m) for m in memory]
        rows += [message_row(world, None, m) for m in transcript]
        if not rows and not llm_calls:
            return

        def write(conn: sa.Connection) -> None:
            queries.insert_messages(conn, rows)
            if llm_calls:
                queries.count_llm_calls(conn, world, agent, llm_calls)

        await self._run(write, write=True)

    async def post_to_chat(self, world: str, message: Message, *, reset_llm_calls: bool) -> None:
        """Store a message posted into a chat from outside (a person, the world) — refused if
        the chat does not exist — and, for human and world messages, give every agent a fresh
        turn budget (SPEC R4); one transaction."""
        row = message_row(world, None, message)
        params = {"world_key": world, "chat_key": message.chat_id}

        def write(conn: sa.Connection) -> None:
            if conn.execute(queries.CHAT_EXISTS, params).first() is None:
                raise NotFoundError(f"chat {message.chat_id!r} not found in world {world!r}")
            queries.insert_messages(conn, [row])
            if reset_llm_calls:
                conn.execute(queries.RESET_LLM_CALLS, params)

        await self._run(write, write=True)

    async def remember_and_read(
        self, world: str, agent: str, chat_id: str, messages: Sequence[Message], after_seq: int
    ) -> tuple[Agent, list[Message], int]:
        """Append ``messages`` to the agent's memory, then read its settings and its memory of
        the chat after ``after_seq`` — one transaction: the incoming message is stored before
        the model is asked (SPEC O3) without a second trip to the database."""
        rows = [message_row(world, agent, m) for m in messages]
        params = {
            "world_key": world,
            "chat_key": chat_id,
            "agent_key": agent,
            "after_seq": after_seq,
        }

        def write(conn: sa.Connection) -> tuple[Agent, list[Message], int]:
            queries.insert_messages(conn, rows)
            row = conn.execute(queries.AGENT, params).first()
            if row is None:
                raise NotFoundError(f"agent {agent!r} not found in world {world!r}")
            found = conn.execute(queries.MEMORY_SINCE, params).all()
            last = int(found[-1].seq) if found else after_seq
            return row_agent(row), [row_message(r) for r in found], last

        return await self._run(write, write=True)

    async def reset_llm_calls(self, world: str) -> None:
        """Human and world messages give every agent a fresh turn budget (SPEC R4)."""

        def update(conn: sa.Connection) -> None:
            conn.execute(queries.RESET_LLM_CALLS, {"world_key": world})

        await self._run(update, write=True)

    # -- chats -------------------------------------------------------------

    async def create_chat(self, chat: Chat) -> Chat:
        row = {
            "world": chat.world,
            "chat_id": chat.chat_id,
            "name": chat.name,
            "created_at": ts(chat.created_at),
            "updated_at": ts(chat.updated_at),
        }

        def insert(conn: sa.Connection) -> None:
            queries.require_world(conn, chat.world)
            conn.execute(sa.insert(_CHATS).values(row))

        try:
            await self._run(insert, write=True)
        except IntegrityError as exc:
            raise AlreadyExistsError(
                f"chat {chat.chat_id!r} already exists in world {chat.world!r}"
            ) from exc
        return chat

    async def get_chat(self, world: str, chat_id: str) -> Chat:
        for chat in await self.list_chats(world, chat_id=chat_id):
            return chat
        raise NotFoundError(f"chat {chat_id!r} not found in world {world!r}")

    async def chat_exists(self, world: str, chat_id: str) -> bool:
        """Whether the world has this chat (one indexed lookup, no message count)."""

        def read(conn: sa.Connection) -> bool:
            params = {"world_key": world, "chat_key": chat_id}
            return conn.execute(queries.CHAT_EXISTS, params).first() is not None

        return await self._run(read, write=False)

    async def list_chats(self, world: str, *, chat_id: str | None = None) -> list[Chat]:
        query = queries.CHATS_OF_WORLD if chat_id is None else queries.CHAT
        params = {"world_key": world, "chat_key": chat_id}

        def read(conn: sa.Connection) -> list[Chat]:
            return [
                Chat(
                    world=r.world,
                    chat_id=r.chat_id,
                    name=r.name,
                    created_at=datetime.fromisoformat(r.created_at),
                    updated_at=datetime.fromisoformat(r.updated_at),
                    message_count=r.message_count,
                )
                for r in conn.execute(query, params)
            ]

        return await self._run(read, write=False)

    async def rename_chat(
        self, world: str, chat_id: str, name: str, *, titled: bool = True
    ) -> None:
        def update(conn: sa.Connection) -> None:
            conn.execute(
                sa.update(_CHATS)
                .where(_CHATS.c.world == world, _CHATS.c.chat_id == chat_id)
                .values(name=name, titled=titled, updated_at=ts(utc_now()))
            )

        await self._run(update, write=True)

    async def chat_is_titled(self, world: str, chat_id: str) -> bool:
        def read(conn: sa.Connection) -> bool:
            return bool(
                conn.execute(
                    sa.select(_CHATS.c.titled).where(
                        _CHATS.c.world == world, _CHATS.c.chat_id == chat_id
                    )
                ).scalar()
            )

        return await self._run(read, write=False)

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

        def insert(conn: sa.Connection) -> None:
            queries.insert_messages(conn, rows)

        await self._run(insert, write=True)

    async def transcript(self, world: str, chat_id: str) -> list[Message]:
        return await self._messages(world, chat_id, owner=None)

    async def memory(self, world: str, agent: str, chat_id: str | None = None) -> list[Message]:
        return await self._messages(world, chat_id, owner=agent)

    async def _messages(
        self, world: str, chat_id: str | None, *, owner: str | None
    ) -> list[Message]:
        query = sa.select(*MESSAGE_COLUMNS).where(_MESSAGES.c.world == world)
        if chat_id is not None:
            query = query.where(_MESSAGES.c.chat_id == chat_id)
        query = query.where(
            _MESSAGES.c.memory_owner.is_(None)
            if owner is None
            else _MESSAGES.c.memory_owner == owner
        ).order_by(_MESSAGES.c.seq)

        def read(conn: sa.Connection) -> list[Message]:
            return [row_message(r) for r in conn.execute(query).all()]

        return await self._run(read, write=False)

    async def memory_since(
        self, world: str, agent: str, chat_id: str, after_seq: int
    ) -> tuple[list[Message], int]:
        """The agent's memory of the chat appended after position ``after_seq``, in order,
        and the position to ask from next time (``after_seq`` when nothing is new)."""
        params = {
            "world_key": world,
            "chat_key": chat_id,
            "agent_key": agent,
            "after_seq": after_seq,
        }

        def read(conn: sa.Connection) -> tuple[list[Message], int]:
            rows = conn.execute(queries.MEMORY_SINCE, params).all()
            last = int(rows[-1].seq) if rows else after_seq
            return [row_message(r) for r in rows], last

        return await self._run(read, write=False)

    async def replace_content(self, world: str, message_id: str, content: str) -> None:
        """Replace a stored message's text, in the transcript and in any memory holding it.

        The one exception to append-only: a hook that rewrites an incoming message (SPEC E2)
        decides what is kept, so the original text must not stay behind anywhere.
        """

        def update(conn: sa.Connection) -> None:
            result = conn.execute(
                sa.update(_MESSAGES)
                .where(_MESSAGES.c.world == world, _MESSAGES.c.message_id == message_id)
                .values(content=content)
            )
            if result.rowcount == 0:
                raise NotFoundError(f"message {message_id!r} not found in world {world!r}")

        await self._run(update, write=True)

    async def messages_since(self, world: str, chat_id: str, after_seq: int) -> list[Message]:
        """Transcript messages appended after a known position (what a command produced)."""
        params = {"world_key": world, "chat_key": chat_id, "after_seq": after_seq}

        def read(conn: sa.Connection) -> list[Message]:
            return [row_message(r) for r in conn.execute(queries.TRANSCRIPT_SINCE, params).all()]

        return await self._run(read, write=False)

    async def last_seq(self) -> int:
        def read(conn: sa.Connection) -> int:
            return int(conn.execute(queries.LAST_SEQ).scalar() or 0)

        return await self._run(read, write=False)

    async def usage_by_agent(self, world: str) -> dict[str, Usage]:
        return await self._usage(world, group=_MESSAGES.c.memory_owner)

    async def usage_by_chat(self, world: str) -> dict[str, Usage]:
        return await self._usage(world, group=_MESSAGES.c.chat_id)

    async def _usage(self, world: str, *, group: sa.ColumnElement[Any]) -> dict[str, Usage]:
        query = (
            sa.select(
                group,
                sa.func.coalesce(sa.func.sum(_MESSAGES.c.input_tokens), 0),
                sa.func.coalesce(sa.func.sum(_MESSAGES.c.output_tokens), 0),
            )
            .where(_MESSAGES.c.world == world, _MESSAGES.c.memory_owner.is_not(None))
            .group_by(group)
        )

        def read(conn: sa.Connection) -> dict[str, Usage]:
            return {
                key: Usage(input_tokens=int(i), output_tokens=int(o))
                for key, i, o in conn.execute(query)
            }

        return await self._run(read, write=False)

    # -- events ------------------------------------------------------------

    async def append_events(self, events: Sequence[WorldEvent]) -> None:
        """Store events for the event log; message events land in the transcript instead."""
        if not events:
            return
        world = events[0].world
        transcript = [
            message_row(world, None, e.message) for e in events if isinstance(e, MessageEvent)
        ]
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

        def insert(conn: sa.Connection) -> None:
            queries.insert_messages(conn, transcript)
            if others:
                conn.execute(queries.INSERT_EVENTS, others)

        await self._run(insert, write=True)

    async def list_events(
        self, world: str, *, kind: str | None = None, chat_id: str | None = None
    ) -> list[dict[str, Any]]:
        table = schema.events
        query = sa.select(table.c.payload).where(table.c.world == world)
        if kind is not None:
            query = query.where(table.c.kind == kind)
        if chat_id is not None:
            query = query.where(table.c.chat_id == chat_id)
        query = query.order_by(table.c.seq)

        def read(conn: sa.Connection) -> list[dict[str, Any]]:
            return [row.payload for row in conn.execute(query)]

        return await self._run(read, write=False)
