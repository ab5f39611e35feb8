"""Messages, memories, usage and events: the conversation part of the SQL store (mixed into
``SQLStorage``). Rows are only appended: a hook's rewrite of a message joins the agents'
memories beside the transcript's original, never in its place (``runtime.hooks``). Only a
person's edit or delete onward removes rows (``storage.cuts``), and counts it in ``chats.cuts``,
which the reads of a kept memory return (``agent_and_memory_since``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agentworld import tracing
from agentworld.errors import NotFoundError
from agentworld.models import Agent, Message, Usage
from agentworld.models.events import MessageEvent, WorldEvent
from agentworld.models.pending import PendingApproval, PendingQuestion
from agentworld.models.records import ToolLogEnd
from agentworld.models.work import InboxChange, Posted, StepResult
from agentworld.routing.mentions import is_human_sender
from agentworld.storage import queries
from agentworld.storage.approvals import INSERT_AUDIT, audit_row
from agentworld.storage.connection import Connection
from agentworld.storage.core import StorageCore
from agentworld.storage.event_log import event_row, insert_log_rows
from agentworld.storage.inbox import apply_change, next_item
from agentworld.storage.leases import claim_lease
from agentworld.storage.pending import answer_call, insert_calls
from agentworld.storage.pending_rows import call_row
from agentworld.storage.rows import MESSAGE_COLUMNS_SQL, message_row, row_agent, row_message
from agentworld.storage.statement import Sql
from agentworld.storage.tool_logs import finish_log

_CHAT_ROW = (
    "SELECT chats.chat_id FROM chats WHERE chats.world = :world_key AND chats.chat_id = :chat_key"
)
_CHAT_FOR_POSTING = Sql(_CHAT_ROW, postgresql=_CHAT_ROW + " FOR UPDATE")
"""The chat's row, locked on PostgreSQL (run there alone: SQLite serialises writers anyway)."""
_RECENT_TRANSCRIPT = Sql(
    f"SELECT {MESSAGE_COLUMNS_SQL} FROM messages WHERE messages.world = :world_key"
    " AND messages.chat_id = :chat_key AND messages.memory_owner IS NULL"
    " ORDER BY messages.seq DESC LIMIT :row_limit"
)


def _usage(group: str, where: str = "") -> Sql:
    """Tokens the agents' messages used, summed by ``group`` (a column of ``messages``)."""
    return Sql(
        f"SELECT messages.{group}, coalesce(sum(messages.input_tokens), 0) AS input_tokens,"
        " coalesce(sum(messages.output_tokens), 0) AS output_tokens FROM messages"
        f" WHERE messages.world = :world_key AND messages.memory_owner IS NOT NULL{where}"
        f" GROUP BY messages.{group}"
    )


_USAGE_BY_AGENT = _usage("memory_owner")
_USAGE_BY_CHAT = _usage("chat_id")
_USAGE_OF_CHAT = _usage("chat_id", " AND messages.chat_id = :chat_key")


def _events_query(kind: bool, chat: bool) -> Sql:
    """The world's logged events that are not messages (of one kind, in one chat, if given)."""
    # The log's message rows only point at the transcript (``storage.event_log``).
    text = (
        "SELECT events.payload FROM events"
        " WHERE events.world = :world_key AND events.kind != 'message'"
    )
    text += " AND events.kind = :kind_key" if kind else ""
    text += " AND events.chat_id = :chat_key" if chat else ""
    return Sql(text + " ORDER BY events.seq", columns={"payload": "json"})


_EVENTS_QUERIES = {(k, c): _events_query(k, c) for k in (False, True) for c in (False, True)}
"""``_events_query`` of each filter, built once."""


class MessageStore(StorageCore):
    async def agent_and_memory(
        self, world: str, agent: str, chat_id: str
    ) -> tuple[Agent, list[Message]]:
        """Fresh agent settings and its memory for one chat, from one consistent read (R5)."""

        def read(conn: Connection) -> tuple[Agent, list[Message]]:
            settings, memory, _, _ = _agent_and_memory_after(conn, world, agent, chat_id, 0, None)
            return settings, memory

        return await self.in_transaction(read, write=False)

    async def agent_and_memory_since(
        self, world: str, agent: str, chat_id: str, after_seq: int, cuts_seen: int | None
    ) -> tuple[Agent, list[Message], int, int]:
        """Fresh agent settings plus its memory of the chat after ``after_seq``, in one read,
        the position to ask from next time and the chat's count of cuts (for callers that keep
        the earlier part). When the count is not ``cuts_seen`` — messages were removed since
        the caller read — the memory is read from the start instead."""

        def read(conn: Connection) -> tuple[Agent, list[Message], int, int]:
            return _agent_and_memory_after(conn, world, agent, chat_id, after_seq, cuts_seen)

        return await self.in_transaction(read, write=False)

    async def commit_step(self, world: str, step: StepResult) -> None:
        """Commit one step of a chat's work in one transaction (SPEC O3): the answer it gives a
        waiting call (refused, with nothing written, when the call was answered already), its
        events, how its tool run ended, its messages (the agents' memories first, then the
        transcript), the events that announce them, fresh turn budgets, its LLM calls, the call that now waits, its audit entry and its inbox
        change — so the answer is in the transcript exactly when it is in the memory, and the
        step is finished exactly when its inbox item says so."""
        rows = [message_row(world, owner, m) for owner, m in step.memory]
        rows += [message_row(world, None, m) for m in step.said]
        if tracing.enabled() and (trace_id := tracing.trace_id()):
            for row in rows:
                row["trace_id"] = trace_id  # for the messages' event-log rows (``message_log_rows``)
        logged = [event_row(e) for e in step.events]
        announced = [event_row(e) for e in step.announced]
        waiting = [call_row(step.waiting)] if step.waiting is not None else []
        audited = [audit_row(world, step.audit)] if step.audit is not None else []
        tool_log_end, inbox, counted, answers = step.tool_log_end, step.inbox, step.llm_calls, step.answers
        fresh_budgets = step.fresh_budgets

        def write(conn: Connection) -> None:
            if answers is not None:
                answer_call(conn, world, answers)
            insert_log_rows(conn, logged)
            if tool_log_end is not None:
                finish_log(conn, tool_log_end)
            queries.insert_messages(conn, rows)
            insert_log_rows(conn, announced)
            if fresh_budgets:
                conn.execute(queries.RESET_LLM_CALLS, {"world_key": world})
            if counted is not None:
                queries.count_llm_calls(conn, world, *counted)
            if waiting:
                insert_calls(conn, waiting)
            if audited:
                conn.execute(INSERT_AUDIT, audited)
            apply_change(conn, world, inbox)

        with tracing.span("storage.commit_step", {"agentworld.world": world, "gen_ai.conversation.id": step.chat_id}):
            await self.in_transaction(write, write=True)

    async def record_agent_step(
        self,
        world: str,
        agent: str,
        messages: Sequence[Message],
        *,
        llm_calls: int = 0,
        inbox: InboxChange | None = None,
    ) -> None:
        """Append one loop step to the agent's memory and count its LLM call, atomically (O3)."""
        await self.record_step_with_transcript(
            world, agent, messages, (), llm_calls=llm_calls, inbox=inbox
        )

    async def record_step_with_transcript(
        self,
        world: str,
        agent: str | None,
        memory: Sequence[Message],
        transcript: Sequence[Message],
        *,
        llm_calls: int = 0,
        inbox: InboxChange | None = None,
        events: Sequence[WorldEvent] = (),
        tool_log_end: ToolLogEnd | None = None,
    ) -> None:
        """``commit_step`` of a step given by its parts: ``memory`` in the agent's memory (with
        ``llm_calls`` counted), ``transcript`` in the chat's transcript."""
        chat = next((m.chat_id for m in [*memory, *transcript]), inbox.chat_id if inbox else "")
        await self.commit_step(
            world,
            StepResult(
                chat,
                said=tuple(transcript),
                memory=tuple((agent, m) for m in memory) if agent is not None else (),
                llm_calls=(agent, llm_calls) if agent is not None and llm_calls else None,
                events=tuple(events),
                tool_log_end=tool_log_end,
                inbox=inbox,
            ),
        )

    async def post_to_chat(
        self,
        world: str,
        message: Message,
        *,
        inbox: InboxChange | None = None,
        claim_for: str | None = None,
        claim_ttl: float = 0.0,
    ) -> Posted:
        """Store a message posted into a chat from outside (a person, the world) — refused if
        the chat does not exist — with the work it causes (``inbox``); a person's or the
        world's message gives every agent a fresh turn budget (SPEC R4). One transaction. With
        ``claim_for``, the same transaction also claims the chat's lease for that owner if it
        is free, so the poster can start running it at once (``Posted.first``)."""
        row = message_row(world, None, message)
        params = {"world_key": world, "chat_key": message.chat_id}
        fresh = is_human_sender(message.sender) or message.sender.lower() == "world"

        def write(conn: Connection) -> Posted:
            # The chat's row is locked first on PostgreSQL (SQLite serialises writers anyway),
            # so messages posted into one chat at once get their place in the transcript and in
            # the inbox in the same order: the order they are answered in.
            if conn.backend == "postgresql":
                conn.execute(_CHAT_FOR_POSTING, params)
            seq = queries.insert_into_chat(conn, row)
            if seq is None:
                raise NotFoundError(f"chat {message.chat_id!r} not found in world {world!r}")
            before = seq - 1  # what the post causes is read after the position before it
            if fresh:
                conn.execute(queries.RESET_LLM_CALLS, params)
            appended = apply_change(conn, world, inbox)
            if claim_for is None or not claim_lease(
                conn, world, message.chat_id, claim_for, claim_ttl
            ):
                return Posted(False, None, before)
            return Posted(True, appended or next_item(conn, world, message.chat_id), before)

        return await self.in_transaction(write, write=True)

    async def remember_and_read(
        self,
        world: str,
        agent: str,
        chat_id: str,
        messages: Sequence[Message],
        after_seq: int,
        *,
        cuts_seen: int | None = None,
        inbox: InboxChange | None = None,
    ) -> tuple[Agent, list[Message], int, int]:
        """Append ``messages`` to the agent's memory, then read as ``agent_and_memory_since``
        does — one transaction: the incoming message is stored before the model is asked
        (SPEC O3) without a second trip to the database."""
        rows = [message_row(world, agent, m) for m in messages]

        def write(conn: Connection) -> tuple[Agent, list[Message], int, int]:
            queries.insert_messages(conn, rows)
            apply_change(conn, world, inbox)
            return _agent_and_memory_after(conn, world, agent, chat_id, after_seq, cuts_seen)

        return await self.in_transaction(write, write=True)

    async def append_messages(
        self,
        world: str,
        entries: Iterable[tuple[str | None, Message]],
        *,
        inbox: InboxChange | None = None,
    ) -> None:
        """Append messages in the order given, each to the transcript (owner None) or an
        agent's memory, and apply ``inbox`` (the work they cause or finish): one transaction,
        so a step's messages land together or not at all."""
        rows = [message_row(world, owner, message) for owner, message in entries]
        if not rows and inbox is None:
            return

        def insert(conn: Connection) -> None:
            queries.insert_messages(conn, rows)
            apply_change(conn, world, inbox)

        await self.in_transaction(insert, write=True)

    async def transcript(self, world: str, chat_id: str) -> list[Message]:
        return await self._messages(queries.TRANSCRIPT, world_key=world, chat_key=chat_id)

    async def memory(self, world: str, agent: str, chat_id: str | None = None) -> list[Message]:
        """The agent's memory of one chat, or of every chat of the world in order."""
        if chat_id is None:
            return await self._messages(queries.MEMORY_OF_EVERY_CHAT, world_key=world, agent_key=agent)
        return await self._messages(queries.MEMORY, world_key=world, chat_key=chat_id, agent_key=agent)

    async def _messages(self, query: Sql, **params: str) -> list[Message]:
        def read(conn: Connection) -> list[Message]:
            return [row_message(r) for r in conn.execute(query, params).all()]

        return await self.in_transaction(read, write=False)

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

        def read(conn: Connection) -> tuple[list[Message], int]:
            rows = conn.execute(queries.MEMORY_SINCE, params).all()
            last = int(rows[-1].seq) if rows else after_seq
            return [row_message(r) for r in rows], last

        return await self.in_transaction(read, write=False)

    async def recent_transcript(self, world: str, chat_id: str, *, limit: int) -> list[Message]:
        """The chat's last ``limit`` transcript messages, newest first."""
        params = {"world_key": world, "chat_key": chat_id, "row_limit": limit}

        def read(conn: Connection) -> list[Message]:
            return [row_message(r) for r in conn.execute(_RECENT_TRANSCRIPT, params).all()]

        return await self.in_transaction(read, write=False)

    async def messages_since(self, world: str, chat_id: str, after_seq: int) -> list[Message]:
        """Transcript messages appended after a known position (what a command produced)."""
        params = {"world_key": world, "chat_key": chat_id, "after_seq": after_seq}

        def read(conn: Connection) -> list[Message]:
            return [row_message(r) for r in conn.execute(queries.TRANSCRIPT_SINCE, params).all()]

        return await self.in_transaction(read, write=False)

    async def since_with_waiting(
        self, world: str, chat_id: str, after_seq: int
    ) -> tuple[list[Message], list[PendingApproval], list[PendingQuestion]]:
        """What a command produced in a chat — its transcript after ``after_seq``, the approval
        requests and the questions still waiting there — in one read, as every ``send`` ends
        with it."""

        def read(conn: Connection) -> tuple[list[Message], list[PendingApproval], list[PendingQuestion]]:
            return queries.since_with_waiting(conn, world, chat_id, after_seq)

        return await self.in_transaction(read, write=False)

    async def last_seq(self) -> int:
        def read(conn: Connection) -> int:
            return int(conn.execute(queries.LAST_SEQ).scalar() or 0)

        return await self.in_transaction(read, write=False)

    async def usage_by_agent(self, world: str) -> dict[str, Usage]:
        return await self._usage(_USAGE_BY_AGENT, {"world_key": world})

    async def usage_by_chat(self, world: str, *, chat_id: str | None = None) -> dict[str, Usage]:
        """By chat id; with ``chat_id``, that chat's alone (absent when nobody answered)."""
        if chat_id is None:
            return await self._usage(_USAGE_BY_CHAT, {"world_key": world})
        return await self._usage(_USAGE_OF_CHAT, {"world_key": world, "chat_key": chat_id})

    async def _usage(self, query: Sql, params: dict[str, str]) -> dict[str, Usage]:
        def read(conn: Connection) -> dict[str, Usage]:
            return {
                key: Usage(input_tokens=int(i), output_tokens=int(o))
                for key, i, o in conn.execute(query, params)
            }

        return await self.in_transaction(read, write=False)

    async def append_events(self, events: Sequence[WorldEvent]) -> None:
        """Store events for the event log; message events land in the transcript instead."""
        if not events:
            return
        world = events[0].world
        transcript = [
            message_row(world, None, e.message) for e in events if isinstance(e, MessageEvent)
        ]
        others = [event_row(e) for e in events if not isinstance(e, MessageEvent)]

        def insert(conn: Connection) -> None:
            queries.insert_messages(conn, transcript)
            if others:
                insert_log_rows(conn, others)  # numbered in commit order (event_log)

        await self.in_transaction(insert, write=True)

    async def list_events(
        self, world: str, *, kind: str | None = None, chat_id: str | None = None
    ) -> list[dict[str, Any]]:
        query = _EVENTS_QUERIES[kind is not None, chat_id is not None]
        params = {"world_key": world}
        if kind is not None:
            params["kind_key"] = kind
        if chat_id is not None:
            params["chat_key"] = chat_id

        def read(conn: Connection) -> list[dict[str, Any]]:
            return [row.payload for row in conn.execute(query, params)]

        return await self.in_transaction(read, write=False)


def _agent_and_memory_after(
    conn: Connection, world: str, agent: str, chat_id: str, after_seq: int, cuts_seen: int | None
) -> tuple[Agent, list[Message], int, int]:
    """Inside the caller's transaction: the agent's settings, its memory of the chat after
    ``after_seq`` — from the start when the chat's count of cuts is not ``cuts_seen`` (given:
    messages the caller read may have been removed since) — the position to read from next
    time and that count. A first read (``after_seq`` 0) of an agent with a memory window
    reads only the window: a fresh process answering in a long chat does not load what the
    agent will not be shown."""
    params = {"world_key": world, "chat_key": chat_id, "agent_key": agent, "after_seq": after_seq}
    row = conn.execute(queries.AGENT_AND_CUTS, params).first()
    if row is None:
        raise NotFoundError(f"agent {agent!r} not found in world {world!r}")
    cuts = int(row.chat_cuts or 0)
    if cuts_seen is not None and cuts != cuts_seen:
        params["after_seq"] = 0
    settings, memory, last = _memory_after(conn, params, row_agent(row))
    return settings, memory, last, cuts


def _memory_after(
    conn: Connection, params: dict[str, Any], settings: Agent
) -> tuple[Agent, list[Message], int]:
    """``_agent_and_memory_after`` for an agent whose settings are in hand already."""
    after_seq = params["after_seq"]
    if after_seq == 0 and settings.memory_window:
        params["window_size"] = settings.memory_window
        found = conn.execute(queries.MEMORY_TAIL, params).all()[::-1]
    else:
        found = conn.execute(queries.MEMORY_SINCE, params).all()
    last = int(found[-1].seq) if found else after_seq
    return settings, [row_message(r) for r in found], last
