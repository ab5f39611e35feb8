"""SQLStorage against a real SQLite file: CRUD, messages, events, migrations, settings (SPEC W1, W2, E1)."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from agentworld.approval.grants import Grant
from agentworld.errors import (
    AlreadyExistsError,
    BusyError,
    InvalidInputError,
    NotFoundError,
    StorageError,
)
from agentworld.events import EventBus, persist_events
from agentworld.models import Agent, Chat, Message, ToolCall, Usage, World
from agentworld.models.events import (
    EVENT_ADAPTER,
    ApprovalEvent,
    CrudEvent,
    MessageEvent,
    SSEEvent,
    SystemEvent,
    ToolEvent,
)
from agentworld.models.pending import PendingApproval, PendingCall, PendingClientCall
from agentworld.models.work import Answer, StepResult
from agentworld.storage import catalog, migrations, schema
from agentworld.storage.connection import Connection
from agentworld.storage.engine import BUSY_TIMEOUT_MS
from agentworld.storage.sql import SQLStorage
from agentworld.storage.statement import Sql
from agentworld.storage.url import DB_ENV_VAR, resolve_database_url, sqlite_file

# -- helpers -------------------------------------------------------------------


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(db_url) as store:
        yield store


def sync_url(db_url: str) -> str:
    """The same file through the stdlib driver, for setting up old or foreign databases."""
    return db_url.replace("sqlite+aiosqlite://", "sqlite://")


def make_agent(world: str, name: str, **fields: Any) -> Agent:
    return Agent(
        **{"world": world, "name": name, "provider": "openai", "model": "gpt-4o-mini", **fields}
    )


def user_message(chat: str, content: str, **fields: Any) -> Message:
    return Message(chat_id=chat, role="user", sender="human", content=content, **fields)


def reply(chat: str, agent: str, content: str, **fields: Any) -> Message:
    return Message(
        chat_id=chat, role="assistant", sender=agent, agent_id=agent, content=content, **fields
    )


async def populated_world(store: SQLStorage, name: str) -> None:
    """A world with an agent, a chat, a transcript message, a memory message and an event."""
    await store.create_world(World(name=name))
    await store.create_agent(make_agent(name, "a1"))
    await store.create_chat(Chat(world=name, chat_id=f"{name}-chat"))
    await store.append_messages(
        name,
        [
            (None, user_message(f"{name}-chat", "hello")),
            ("a1", user_message(f"{name}-chat", "hello")),
        ],
    )
    await store.append_events(
        [SystemEvent(world=name, level="info", text="started", chat_id=f"{name}-chat")]
    )


async def rows_of(store: SQLStorage, table: sa.Table, world: str) -> int:
    query = Sql(f"SELECT count(*) FROM {table.name} WHERE world = :world")
    return int(
        await store.in_transaction(
            lambda conn: conn.execute(query, {"world": world}).scalar_one(), write=False
        )
    )


# -- worlds --------------------------------------------------------------------


async def test_world_round_trip_keeps_every_field(storage: SQLStorage) -> None:
    world = World(
        name="lab",
        description="a test world",
        turn_limit=9,
        max_iterations=3,
        approval_timeout=12.5,
        streaming=False,
        main_agent="alice",
        current_chat_id="chat-1",
        working_dir="/tmp/lab",
        policy_files=["policy/a.toml", "policy/b.toml"],
        mcp_config={"servers": {"fs": {"command": "mcp-fs", "args": ["--root", "/tmp"]}}},
    )
    await storage.create_world(world)

    assert await storage.get_world("lab") == world
    assert await storage.list_worlds() == [world]


async def test_update_world_persists_changes(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    world = await storage.get_world("lab")

    updated = await storage.update_world(
        world.model_copy(update={"turn_limit": 2, "policy_files": ["p.toml"]})
    )

    stored = await storage.get_world("lab")
    assert stored.turn_limit == 2
    assert stored.policy_files == ["p.toml"]
    assert stored.updated_at == updated.updated_at
    assert stored.updated_at >= world.updated_at


async def test_duplicate_world_is_rejected(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab", description="first"))

    with pytest.raises(AlreadyExistsError, match="lab"):
        await storage.create_world(World(name="lab", description="second"))
    assert (await storage.get_world("lab")).description == "first"


@pytest.mark.parametrize("operation", ["get", "update", "delete"])
async def test_unknown_world_is_not_found_and_named(storage: SQLStorage, operation: str) -> None:
    with pytest.raises(NotFoundError, match="nowhere"):
        match operation:
            case "get":
                await storage.get_world("nowhere")
            case "update":
                await storage.update_world(World(name="nowhere"))
            case "delete":
                await storage.delete_world("nowhere")


async def test_delete_world_removes_everything_in_it(storage: SQLStorage) -> None:
    await populated_world(storage, "doomed")
    log = Sql(
        "INSERT INTO tool_logs (world, chat_id, agent, tool_call_id, tool_name, status, started_at)"
        " VALUES ('doomed', 'doomed-chat', 'a1', 'call_1', 'shell', 'ok', '2024-01-01T00:00:00+00:00')"
    )
    await storage.in_transaction(lambda conn: conn.execute(log), write=True)
    # Queued work and a lease, as a process killed mid-turn leaves them: a world created
    # later under the same name must not inherit them.
    work = Sql(
        "INSERT INTO chat_inbox (world, chat_id, position, work, created_at)"
        " VALUES ('doomed', 'doomed-chat', 1, :work, '2024-01-01T00:00:00+00:00')",
        json_params=("work",),
    )
    lease = Sql(
        "INSERT INTO chat_leases (world, chat_id, owner, expires_at)"
        " VALUES ('doomed', 'doomed-chat', :owner, 32503680000.0)"
    )  # a pid above any pid_max: its process is provably gone
    owner = {"owner": f"{socket.gethostname()}:{2**22 + 1}:1:r"}
    await storage.in_transaction(
        lambda conn: (conn.execute(work, {"work": {"kind": "route"}}), conn.execute(lease, owner)),
        write=True,
    )

    await storage.delete_world("doomed")

    with pytest.raises(NotFoundError):
        await storage.get_world("doomed")
    tables = (schema.agents, schema.chats, schema.messages, schema.events, schema.tool_logs, schema.chat_inbox, schema.chat_leases)
    for table in tables:
        assert await rows_of(storage, table, "doomed") == 0, table.name



async def test_delete_world_is_refused_while_another_process_runs_one_of_its_chats(
    storage: SQLStorage,
) -> None:
    """A claim of another host's process is assumed alive until it lapses: the world stays,
    the refusal names the chat; once the claim has lapsed, the world goes."""
    await storage.create_world(World(name="busy"))
    await storage.create_chat(Chat(world="busy", chat_id="busy-chat", name="c"))
    claim = {"world": "busy", "chat_id": "busy-chat", "owner": "elsewhere:4242:1:r"}
    claim_it = Sql(
        "INSERT INTO chat_leases (world, chat_id, owner, expires_at)"
        " VALUES (:world, :chat_id, :owner, :expires_at)"
    )
    await storage.in_transaction(
        lambda conn: conn.execute(claim_it, {**claim, "expires_at": time.time() + 60}),
        write=True,
    )

    with pytest.raises(BusyError, match="busy-chat"):
        await storage.delete_world("busy")
    assert (await storage.get_world("busy")).name == "busy"

    lapse = Sql("UPDATE chat_leases SET expires_at = :expires_at")
    await storage.in_transaction(
        lambda conn: conn.execute(lapse, {"expires_at": time.time() - 1}), write=True
    )
    await storage.delete_world("busy")
    with pytest.raises(NotFoundError):
        await storage.get_world("busy")


def test_deletions_cover_every_table_of_a_world_or_chat() -> None:
    """The stores name the tables they delete from (they do not load the schema): a world's
    are every table with a ``world`` column; a chat's, those with ``chat_id`` too, but for
    the records that outlive it."""
    tables = schema.metadata.sorted_tables
    assert set(catalog.WORLD_TABLES) == {t.name for t in tables if "world" in t.c}
    of_chats = {t.name for t in tables if "world" in t.c and "chat_id" in t.c}
    assert set(catalog.CHAT_TABLES) == of_chats - {"audit_log", "approval_grants"}


async def test_delete_world_keeps_other_worlds(storage: SQLStorage) -> None:
    await populated_world(storage, "doomed")
    await populated_world(storage, "kept")

    await storage.delete_world("doomed")

    assert [w.name for w in await storage.list_worlds()] == ["kept"]
    assert [a.name for a in await storage.list_agents("kept")] == ["a1"]
    assert [c.chat_id for c in await storage.list_chats("kept")] == ["kept-chat"]
    assert [m.content for m in await storage.transcript("kept", "kept-chat")] == ["hello"]
    assert [m.content for m in await storage.memory("kept", "a1")] == ["hello"]
    assert [e["text"] for e in await storage.list_events("kept")] == ["started"]


# -- agents --------------------------------------------------------------------


async def test_agent_round_trip_keeps_every_field(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    agent = Agent(
        world="lab",
        name="Alice",
        provider="openai-compatible",
        model="llama-3",
        system_prompt="You are Alice.",
        temperature=0.3,
        max_tokens=256,
        base_url="http://127.0.0.1:9999/v1",
        api_key_env="LOCAL_LLM_KEY",
        status="inactive",
    )
    await storage.create_agent(agent)

    assert await storage.get_agent("lab", "Alice") == agent
    assert await storage.list_agents("lab") == [agent]


async def test_update_agent_persists_settings_but_not_the_call_count(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_agent(make_agent("lab", "alice"))
    await storage.add_llm_call("lab", "alice")
    stale = await storage.get_agent("lab", "alice")

    await storage.update_agent(
        stale.model_copy(update={"temperature": 1.5, "model": "gpt-4o", "llm_call_count": 0})
    )

    stored = await storage.get_agent("lab", "alice")
    assert (stored.temperature, stored.model) == (1.5, "gpt-4o")
    assert stored.llm_call_count == 1


async def test_agent_lookup_ignores_case(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_agent(make_agent("lab", "Alice"))

    for spelling in ("alice", "ALICE", "aLiCe"):
        assert (await storage.get_agent("lab", spelling)).name == "Alice"


async def test_duplicate_agent_name_differing_only_in_case_is_rejected(
    storage: SQLStorage,
) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_agent(make_agent("lab", "Alice"))

    with pytest.raises(AlreadyExistsError, match="alice"):
        await storage.create_agent(make_agent("lab", "alice"))
    with pytest.raises(AlreadyExistsError, match="Alice"):
        await storage.create_agent(make_agent("lab", "Alice"))
    assert [a.name for a in await storage.list_agents("lab")] == ["Alice"]


async def test_same_agent_name_in_two_worlds_is_allowed(storage: SQLStorage) -> None:
    await storage.create_world(World(name="one"))
    await storage.create_world(World(name="two"))

    await storage.create_agent(make_agent("one", "alice", model="m1"))
    await storage.create_agent(make_agent("two", "alice", model="m2"))

    assert (await storage.get_agent("one", "alice")).model == "m1"
    assert (await storage.get_agent("two", "alice")).model == "m2"


async def test_unknown_agent_is_not_found_and_named(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))

    with pytest.raises(NotFoundError, match="ghost"):
        await storage.get_agent("lab", "ghost")
    with pytest.raises(NotFoundError, match="ghost"):
        await storage.delete_agent("lab", "ghost")
    with pytest.raises(NotFoundError, match="ghost"):
        await storage.update_agent(make_agent("lab", "ghost"))


async def test_agent_in_unknown_world_names_the_world(storage: SQLStorage) -> None:
    with pytest.raises(NotFoundError, match="nowhere"):
        await storage.get_agent("nowhere", "alice")
    with pytest.raises(NotFoundError, match="nowhere"):
        await storage.create_agent(make_agent("nowhere", "alice"))


async def test_delete_agent_by_any_case(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_agent(make_agent("lab", "Alice"))
    await storage.create_agent(make_agent("lab", "bob"))

    await storage.delete_agent("lab", "ALICE")

    assert [a.name for a in await storage.list_agents("lab")] == ["bob"]


def waiting(agent: str, call_id: str, kind: str = "approval") -> PendingCall:
    call = {
        "world": "lab",
        "tool_call_id": call_id,
        "chat_id": "c1",
        "agent": agent,
        "tool_name": "shell_cmd",
        "arguments": '{"command": "rm x"}',
        "batch_id": f"msg_{call_id}",
        "trigger_sender": "human",
    }
    if kind == "client":
        return PendingClientCall.model_validate(call)
    return PendingApproval.model_validate(
        {
            **call,
            "original_call_id": f"orig_{call_id}",
            "request_message_id": f"msg_{call_id}",
            "message": "run `rm x`?",
            "tool_args": {"command": "rm x"},
        }
    )


def grant(scope: str, agent: str | None, grant_id: str) -> Grant:
    return Grant(
        grant_id=grant_id,
        world="lab",
        scope=scope,  # type: ignore[arg-type]
        tool_name="shell_cmd",
        agent=agent,
        chat_id="c1" if scope == "session" else None,
        roots=frozenset({"ls"}),
    )


async def test_deleting_an_agent_cancels_its_waits_and_drops_its_memory_and_session_grants(
    storage: SQLStorage,
) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_agent(make_agent("lab", "Alice"))
    await storage.create_agent(make_agent("lab", "bob"))
    await storage.pending.add([waiting("Alice", "ap_1"), waiting("Alice", "cl_1", "client")])
    await storage.pending.add([waiting("bob", "ap_2")])
    for g in (
        grant("session", "Alice", "g1"),
        grant("session", "bob", "g2"),
        grant("always", None, "g3"),
    ):
        await storage.approvals.add_grant(g)
    await storage.append_messages(
        "lab",
        [
            ("Alice", user_message("c1", "alice remembers")),
            ("bob", user_message("c1", "bob remembers")),
            (None, user_message("c1", "everyone saw this")),
        ],
    )

    assert await storage.delete_agent("lab", "ALICE") == "Alice"

    alice_calls = [await storage.pending.get("lab", i) for i in ("ap_1", "cl_1")]
    assert [(c.status, c.answer) for c in alice_calls if c] == [
        ("cancelled", {"reason": "agent 'Alice' was deleted", "actor": "human"})
    ] * 2
    assert [c.tool_call_id for c in await storage.pending.find("lab")] == ["ap_2"]
    with pytest.raises(InvalidInputError, match="no longer pending: agent 'Alice' was deleted"):
        await storage.commit_step("lab", StepResult("c1", answers=Answer("approval", "ap_1", {})))
    assert [g.grant_id for g in await storage.approvals.grants("lab")] == ["g2", "g3"]
    assert await storage.memory("lab", "Alice") == []
    assert [m.content for m in await storage.memory("lab", "bob")] == ["bob remembers"]
    assert [m.content for m in await storage.transcript("lab", "c1")] == ["everyone saw this"]
    audit = await storage.approvals.audit_log("lab")
    assert [(e.event, e.approval_id, e.tool_args) for e in audit] == [
        ("cancelled", "ap_1", {"command": "rm x"}),
        ("cancelled", "cl_1", None),
        ("agent_deleted", None, None),
    ]
    assert audit[-1].detail == {"cancelled": ["ap_1", "cl_1"], "sessionGrantsRevoked": 1}

    # A namesake starts from nothing.
    await storage.create_agent(make_agent("lab", "alice"))
    assert await storage.memory("lab", "alice") == []
    assert [g.agent for g in await storage.approvals.grants("lab")] == ["bob", None]


# -- chats ---------------------------------------------------------------------


async def test_chat_round_trip_and_message_count(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    chat = await storage.create_chat(Chat(world="lab", chat_id="c1", name="Planning"))
    await storage.append_messages(
        "lab",
        [
            (None, user_message("c1", "one")),
            (None, user_message("c1", "two")),
            ("alice", user_message("c1", "memory rows are not transcript")),
        ],
    )

    stored = await storage.get_chat("lab", "c1")

    assert stored == chat.model_copy(update={"message_count": 2})


async def test_rename_chat_marks_it_titled(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_world(World(name="other"))
    await storage.create_agent(Agent(world="lab", name="Alice", provider="openai", model="m"))
    await storage.create_agent(Agent(world="other", name="Bob", provider="openai", model="m"))
    await storage.create_chat(Chat(world="lab", chat_id="c1"))
    await storage.append_messages(
        "lab", [(None, user_message("c1", "one")), ("Alice", user_message("c1", "memory"))]
    )
    untitled = await storage.untitled_chat("lab", "c1")
    assert untitled is not None
    transcript, agents = untitled
    assert [m.content for m in transcript] == ["one"]
    assert [a.name for a in agents] == ["Alice"]

    await storage.rename_chat("lab", "c1", "Budget review")

    assert (await storage.get_chat("lab", "c1")).name == "Budget review"
    assert await storage.untitled_chat("lab", "c1") is None


async def test_chats_are_listed_per_world_in_creation_order(storage: SQLStorage) -> None:
    await storage.create_world(World(name="one"))
    await storage.create_world(World(name="two"))
    for chat_id in ("first", "second", "third"):
        await storage.create_chat(Chat(world="one", chat_id=chat_id))
    await storage.create_chat(Chat(world="two", chat_id="elsewhere"))

    assert [c.chat_id for c in await storage.list_chats("one")] == ["first", "second", "third"]


async def test_unknown_chat_is_not_found_and_named(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))

    with pytest.raises(NotFoundError, match="missing-chat"):
        await storage.get_chat("lab", "missing-chat")
    with pytest.raises(NotFoundError, match="nowhere"):
        await storage.create_chat(Chat(world="nowhere", chat_id="c1"))


# -- messages ------------------------------------------------------------------


async def test_transcript_and_memory_are_kept_apart(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    public = user_message("c1", "@alice hi")
    alice_sees = user_message("c1", "@alice hi")
    alice_says = reply("c1", "alice", "hello")
    bob_sees = user_message("c1", "alice said hello")

    await storage.append_messages(
        "lab", [(None, public), ("alice", alice_sees), ("alice", alice_says), ("bob", bob_sees)]
    )

    assert await storage.transcript("lab", "c1") == [public]
    assert await storage.memory("lab", "alice", "c1") == [alice_sees, alice_says]
    assert await storage.memory("lab", "bob", "c1") == [bob_sees]


async def test_messages_are_filtered_by_chat_and_world(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_world(World(name="other"))
    in_c1 = user_message("c1", "in c1")
    in_c2 = user_message("c2", "in c2")
    memory_c1 = reply("c1", "alice", "memory c1")
    memory_c2 = reply("c2", "alice", "memory c2")
    await storage.append_messages(
        "lab", [(None, in_c1), (None, in_c2), ("alice", memory_c1), ("alice", memory_c2)]
    )
    await storage.append_messages("other", [(None, user_message("c1", "other world"))])

    assert await storage.transcript("lab", "c1") == [in_c1]
    assert await storage.transcript("lab", "c2") == [in_c2]
    assert await storage.memory("lab", "alice", "c2") == [memory_c2]
    assert await storage.memory("lab", "alice") == [memory_c1, memory_c2]
    assert await storage.memory("other", "alice") == []


async def test_messages_come_back_in_insertion_order(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    sent = [user_message("c1", f"message {i}") for i in range(30)]
    # Alternate batches and single appends, and give later messages EARLIER timestamps,
    # so only the insertion order can explain the result.
    sent = [
        m.model_copy(update={"created_at": sent[-1 - i].created_at}) for i, m in enumerate(sent)
    ]
    await storage.append_messages("lab", [(None, m) for m in sent[:10]])
    for message in sent[10:20]:
        await storage.append_messages("lab", [(None, message)])
    await storage.append_messages("lab", [(None, m) for m in sent[20:]])

    assert [m.content for m in await storage.transcript("lab", "c1")] == [m.content for m in sent]


async def test_every_message_field_round_trips(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    message = Message(
        chat_id="c1",
        role="assistant",
        sender="alice",
        agent_id="alice",
        content="line one\nline two — ünïcode ✓",
        reply_to_message_id="msg_parent",
        input_tokens=11,
        output_tokens=7,
    )
    await storage.append_messages("lab", [(None, message)])

    [stored] = await storage.transcript("lab", "c1")

    assert stored == message
    assert stored.to_json() == message.to_json()


async def test_tool_calls_round_trip_exactly(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    calls = [
        ToolCall.of("call_abc123", "shell", '{"command": "ls -la", "cwd": "/tmp"}'),
        # Arguments are the model's text, kept byte for byte even when not valid JSON.
        ToolCall.of("call_def456", "read_file", '{"path": "a b.txt",  "limit":10 '),
        ToolCall.of("call_ghi789", "noop"),
    ]
    asked = reply("c1", "alice", "", tool_calls=calls)
    result = Message(
        chat_id="c1", role="tool", sender="shell", content="total 0", tool_call_id="call_abc123"
    )
    await storage.append_messages("lab", [("alice", asked), ("alice", result)])

    stored_ask, stored_result = await storage.memory("lab", "alice", "c1")

    assert stored_ask.tool_calls == calls
    assert [c.model_dump() for c in stored_ask.tool_calls or []] == [c.model_dump() for c in calls]
    assert stored_ask.to_json()["tool_calls"][1] == {
        "id": "call_def456",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a b.txt",  "limit":10 '},
    }
    assert stored_result.tool_call_id == "call_abc123"
    assert stored_result.role == "tool"


async def test_message_without_tool_calls_stays_without(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.append_messages("lab", [(None, user_message("c1", "plain"))])

    [stored] = await storage.transcript("lab", "c1")

    assert stored.tool_calls is None
    assert stored.tool_call_id is None


async def test_messages_since_returns_only_later_transcript_messages_of_the_chat(
    storage: SQLStorage,
) -> None:
    await storage.create_world(World(name="lab"))
    await storage.append_messages("lab", [(None, user_message("c1", "before"))])
    mark = await storage.last_seq()
    after = [user_message("c1", "after 1"), reply("c1", "alice", "after 2")]
    await storage.append_messages(
        "lab",
        [
            (None, after[0]),
            ("alice", reply("c1", "alice", "memory only")),
            (None, user_message("c2", "other chat")),
            (None, after[1]),
        ],
    )

    assert await storage.messages_since("lab", "c1", mark) == after
    assert await storage.messages_since("lab", "c1", await storage.last_seq()) == []
    assert [m.content for m in await storage.messages_since("lab", "c1", 0)] == [
        "before",
        "after 1",
        "after 2",
    ]


async def test_last_seq_is_zero_on_an_empty_database(storage: SQLStorage) -> None:
    assert await storage.last_seq() == 0


async def test_usage_is_summed_by_agent_and_by_chat(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_world(World(name="other"))
    await storage.append_messages(
        "lab",
        [
            ("alice", reply("c1", "alice", "a", input_tokens=10, output_tokens=1)),
            ("alice", reply("c2", "alice", "b", input_tokens=20, output_tokens=2)),
            ("bob", reply("c1", "bob", "c", input_tokens=100, output_tokens=10)),
            ("bob", user_message("c1", "no usage on inputs")),
            # The transcript copy of a reply must not be counted a second time.
            (None, reply("c1", "alice", "a", input_tokens=10, output_tokens=1)),
        ],
    )
    await storage.append_messages(
        "other", [("alice", reply("c1", "alice", "x", input_tokens=999, output_tokens=999))]
    )

    assert await storage.usage_by_agent("lab") == {
        "alice": Usage(input_tokens=30, output_tokens=3),
        "bob": Usage(input_tokens=100, output_tokens=10),
    }
    assert await storage.usage_by_chat("lab") == {
        "c1": Usage(input_tokens=110, output_tokens=11),
        "c2": Usage(input_tokens=20, output_tokens=2),
    }
    assert await storage.usage_by_chat("lab", chat_id="c2") == {"c2": Usage(input_tokens=20, output_tokens=2)}
    assert await storage.usage_by_chat("lab", chat_id="c3") == {}
    assert await storage.usage_by_agent("empty") == {}


async def test_record_agent_step_appends_memory_and_counts_the_call(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_agent(make_agent("lab", "alice"))
    step = [
        reply("c1", "alice", "", tool_calls=[ToolCall.of("call_1", "shell", "{}")]),
        Message(chat_id="c1", role="tool", sender="shell", content="ok", tool_call_id="call_1"),
    ]

    await storage.record_agent_step("lab", "alice", step, llm_calls=1)
    await storage.record_agent_step("lab", "alice", [reply("c1", "alice", "done")], llm_calls=1)

    agent, memory = await storage.agent_and_memory("lab", "alice", "c1")
    assert agent.llm_call_count == 2
    assert agent.last_active is not None
    assert [m.content for m in memory] == ["", "ok", "done"]
    assert await storage.transcript("lab", "c1") == []


async def test_record_agent_step_without_llm_call_leaves_the_count(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_agent(make_agent("lab", "alice"))

    await storage.record_agent_step("lab", "alice", [user_message("c1", "incoming")])

    agent = await storage.get_agent("lab", "alice")
    assert agent.llm_call_count == 0
    assert agent.last_active is None
    assert len(await storage.memory("lab", "alice")) == 1


async def test_record_agent_step_is_all_or_nothing(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_agent(make_agent("lab", "alice"))
    good = reply("c1", "alice", "would be stored")
    # A message that bypassed validation: chat_id NULL violates the schema on the second row,
    # after the first row of the batch has already been inserted.
    broken = reply("c1", "alice", "x").model_copy(update={"chat_id": None})

    with pytest.raises(StorageError, match="refused a row"):
        await storage.record_agent_step("lab", "alice", [good, broken], llm_calls=1)

    assert await storage.memory("lab", "alice") == []
    assert (await storage.get_agent("lab", "alice")).llm_call_count == 0


async def test_concurrent_steps_are_all_counted(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_agent(make_agent("lab", "alice"))

    await asyncio.gather(
        *(
            storage.record_agent_step("lab", "alice", [reply("c1", "alice", str(i))], llm_calls=1)
            for i in range(40)
        )
    )

    assert (await storage.get_agent("lab", "alice")).llm_call_count == 40
    assert sorted(int(m.content or "") for m in await storage.memory("lab", "alice")) == list(
        range(40)
    )


async def test_add_llm_call_returns_the_new_count(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_agent(make_agent("lab", "alice"))
    await storage.create_agent(make_agent("lab", "bob"))

    counts = [await storage.add_llm_call("lab", "alice") for _ in range(3)]

    assert counts == [1, 2, 3]
    assert (await storage.get_agent("lab", "alice")).llm_call_count == 3
    assert (await storage.get_agent("lab", "bob")).llm_call_count == 0


async def test_a_step_with_fresh_budgets_zeroes_every_agent_of_the_world_only(
    storage: SQLStorage,
) -> None:
    await storage.create_world(World(name="lab"))
    await storage.create_world(World(name="other"))
    for world, agent in (("lab", "alice"), ("lab", "bob"), ("other", "carol")):
        await storage.create_agent(make_agent(world, agent))
        await storage.add_llm_call(world, agent)
    await storage.add_llm_call("lab", "bob")

    await storage.commit_step("lab", StepResult("no-chat", fresh_budgets=True))

    assert [a.llm_call_count for a in await storage.list_agents("lab")] == [0, 0]
    assert (await storage.get_agent("other", "carol")).llm_call_count == 1
    assert await storage.add_llm_call("lab", "bob") == 1


async def test_memory_rows_are_never_rewritten(storage: SQLStorage) -> None:
    """SPEC §6: steps append; an earlier row keeps its seq, id and content forever."""
    await storage.create_world(World(name="lab"))
    await storage.create_agent(make_agent("lab", "alice"))

    async def snapshot() -> list[tuple[Any, ...]]:
        query = Sql(
            "SELECT seq, message_id, memory_owner, chat_id, content, tool_calls, created_at"
            " FROM messages ORDER BY seq",
            columns={"tool_calls": "json"},
        )
        return await storage.in_transaction(
            lambda conn: [tuple(row) for row in conn.execute(query)], write=False
        )

    history: list[list[tuple[Any, ...]]] = []
    for i in range(25):
        await storage.append_messages(
            "lab",
            [(None, user_message("c1", f"turn {i}")), ("alice", user_message("c1", f"turn {i}"))],
        )
        call = ToolCall.of(f"call_{i}", "shell", f'{{"n": {i}}}')
        await storage.record_agent_step(
            "lab",
            "alice",
            [
                reply("c1", "alice", "", tool_calls=[call]),
                Message(
                    chat_id="c1", role="tool", sender="shell", content=str(i), tool_call_id=call.id
                ),
                reply("c1", "alice", f"answer {i}"),
            ],
            llm_calls=2,
        )
        history.append(await snapshot())

    for earlier, later in zip(history, history[1:], strict=False):
        assert later[: len(earlier)] == earlier
        assert len(later) == len(earlier) + 5
    final = history[-1]
    assert [row[0] for row in final] == sorted({row[0] for row in final})
    assert (await storage.get_agent("lab", "alice")).llm_call_count == 50


# -- events --------------------------------------------------------------------


async def test_message_events_land_in_the_transcript(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    first = user_message("c1", "hello @alice")
    second = reply("c1", "alice", "hi")

    await storage.append_events(
        [MessageEvent(world="lab", message=first), MessageEvent(world="lab", message=second)]
    )

    assert await storage.transcript("lab", "c1") == [first, second]
    assert await storage.list_events("lab") == []


async def test_other_events_are_logged_with_kind_and_chat(storage: SQLStorage) -> None:
    await storage.create_world(World(name="lab"))
    events = [
        SSEEvent(world="lab", phase="start", chat_id="c1", agent="alice", message_id="m1"),
        ToolEvent(
            world="lab",
            phase="result",
            chat_id="c1",
            agent="alice",
            tool_call_id="call_1",
            tool_name="shell",
            detail={"exit_code": 0, "stdout": "ok"},
        ),
        SystemEvent(world="lab", level="warning", text="slow provider", chat_id="c2"),
        CrudEvent(world="lab", operation="create", entity="agent", name="bob", data={"model": "m"}),
        ApprovalEvent(
            world="lab",
            phase="requested",
            chat_id="c2",
            agent="alice",
            approval_id="apr_1",
            tool_name="shell",
        ),
    ]
    message = user_message("c1", "mixed in")

    await storage.append_events(
        [*events[:2], MessageEvent(world="lab", message=message), *events[2:]]
    )

    stored = await storage.list_events("lab")
    assert [EVENT_ADAPTER.validate_python(payload) for payload in stored] == events
    assert [p["kind"] for p in stored] == ["sse", "tool", "system", "crud", "approval"]
    assert await storage.transcript("lab", "c1") == [message]
    assert [p["kind"] for p in await storage.list_events("lab", kind="tool")] == ["tool"]
    assert [p["kind"] for p in await storage.list_events("lab", chat_id="c2")] == [
        "system",
        "approval",
    ]
    assert await storage.list_events("lab", kind="tool", chat_id="c2") == []
    assert await storage.list_events("other") == []


async def test_append_no_events_is_a_no_op(storage: SQLStorage) -> None:
    await storage.append_events([])
    assert await storage.last_seq() == 0


async def test_persist_events_drops_stream_chunks_and_leaves_ends_to_their_step(
    storage: SQLStorage,
) -> None:
    """Chunks are live only; an ``end`` is stored by the step that stores its answer, in that
    transaction (tests/runtime/test_streaming.py sees it stored in a real turn)."""
    await storage.create_world(World(name="lab"))
    bus = EventBus("lab")
    persist_events(bus, storage)
    seen: list[str] = []
    bus.subscribe(lambda event: seen.append(event.kind))

    def sse(phase: Any, content: str = "") -> SSEEvent:
        return SSEEvent(
            world="lab", phase=phase, chat_id="c1", agent="alice", message_id="m1", content=content
        )

    answer = reply("c1", "alice", "Hello world")
    for event in (
        sse("start"),
        sse("chunk", "Hel"),
        sse("chunk", "lo world"),
        sse("end", "Hello world"),
        MessageEvent(world="lab", message=answer),
        SystemEvent(world="lab", text="boom", chat_id="c1"),
    ):
        await bus.publish(event)

    stored = await storage.list_events("lab")
    assert [(p["kind"], p.get("phase")) for p in stored] == [
        ("sse", "start"),
        ("system", None),
    ]
    # A message is stored by whoever publishes it (with the work it causes), never a second
    # time by the event log.
    assert await storage.transcript("lab", "c1") == []
    # Chunks are not stored, but other subscribers still receive them.
    assert seen == ["sse", "sse", "sse", "sse", "message", "system"]


# -- migrations ----------------------------------------------------------------


def test_upgrade_of_a_fresh_database_reaches_the_latest_version(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    try:
        with engine.begin() as conn:
            version = migrations.upgrade(conn)
            assert version == len(migrations.MIGRATIONS)
            assert migrations.current_version(conn) == len(migrations.MIGRATIONS)
            tables = set(sa.inspect(conn).get_table_names())
        assert set(schema.metadata.tables) <= tables
        with engine.begin() as conn:
            assert migrations.upgrade(conn) == len(migrations.MIGRATIONS)
            rows = conn.execute(sa.select(schema.schema_version.c.version)).scalars().all()
        assert rows == [len(migrations.MIGRATIONS)]
    finally:
        engine.dispose()


@pytest.mark.sqlite_only
async def test_version_1_database_is_upgraded_on_open_and_keeps_its_data(db_url: str) -> None:
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.begin() as conn:
            assert migrations.upgrade(conn, migrations.MIGRATIONS[:1]) == 1
            conn.execute(
                sa.insert(schema.worlds).values(
                    name="old",
                    config={"description": "made by v1", "turn_limit": 7},
                    created_at="2024-01-01T00:00:00+00:00",
                    updated_at="2024-01-01T00:00:00+00:00",
                )
            )
            assert not sa.inspect(conn).has_table("events")
    finally:
        engine.dispose()

    async with SQLStorage(db_url) as storage:
        world = await storage.get_world("old")
        assert (world.description, world.turn_limit) == ("made by v1", 7)
        version = await storage.in_schema_transaction(migrations.current_version)
        assert version == len(migrations.MIGRATIONS)
        tables = await storage.in_schema_transaction(lambda c: set(sa.inspect(c).get_table_names()))
        assert {"events", "tool_logs"} <= tables
        await storage.append_events([SystemEvent(world="old", text="after upgrade")])
        assert [p["text"] for p in await storage.list_events("old")] == ["after upgrade"]


@pytest.mark.sqlite_only
async def test_worlds_stored_with_an_infinite_approval_timeout_load_after_the_upgrade(
    db_url: str,
) -> None:
    engine = sa.create_engine(sync_url(db_url))
    stored = {"forever": float("inf"), "huge": 1e15, "broken": float("nan"), "fine": 45.0}
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, migrations.MIGRATIONS[:4])  # before timeouts were checked
            for name, timeout in stored.items():
                conn.execute(
                    sa.insert(schema.worlds).values(
                        name=name,
                        config={"approval_timeout": timeout, "turn_limit": 3},
                        created_at="2024-01-01T00:00:00+00:00",
                        updated_at="2024-01-01T00:00:00+00:00",
                    )
                )
    finally:
        engine.dispose()

    async with SQLStorage(db_url) as storage:
        loaded = {w.name: (w.approval_timeout, w.turn_limit) for w in await storage.list_worlds()}
    year = 365 * 24 * 3600.0
    assert loaded == {
        "forever": (year, 3),
        "huge": (year, 3),
        "broken": (300.0, 3),
        "fine": (45.0, 3),
    }


@pytest.mark.sqlite_only
async def test_database_from_a_newer_version_is_refused(db_url: str) -> None:
    newer = len(migrations.MIGRATIONS) + 1
    engine = sa.create_engine(sync_url(db_url))
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn)
            conn.execute(sa.update(schema.schema_version).values(version=newer))
    finally:
        engine.dispose()

    storage = SQLStorage(db_url)
    with pytest.raises(StorageError, match=f"version {newer}"):
        await storage.open()
    with pytest.raises(StorageError, match="not open"):
        await storage.list_worlds()


# -- SQLite settings and failures ----------------------------------------------


@pytest.mark.sqlite_only
async def test_sqlite_runs_in_wal_mode_and_waits_for_locks_only_on_the_worker(
    storage: SQLStorage,
) -> None:
    """A unit run in place must not wait (no busy timeout: it learns at once that another
    connection holds the lock, and goes to the worker); the worker's units wait."""

    def pragmas(conn: Connection) -> tuple[Any, Any, str]:
        journal = conn.execute(Sql("PRAGMA journal_mode")).scalar()
        timeout = conn.execute(Sql("PRAGMA busy_timeout")).scalar()
        return journal, timeout, threading.current_thread().name

    journal, timeout, where = await storage.in_transaction(pragmas, write=True)

    assert journal == "wal"
    assert (timeout, where) == (0, threading.current_thread().name)

    path = sqlite_file(storage.url)
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        waiting = asyncio.ensure_future(storage.in_transaction(pragmas, write=True))
        await asyncio.sleep(0.2)
        holder.rollback()
        _, timeout, where = await asyncio.wait_for(waiting, timeout=10)
    finally:
        holder.close()

    assert timeout == BUSY_TIMEOUT_MS and where.startswith("agentworld-db")
    assert (await storage.in_transaction(pragmas, write=False))[1] == 0


async def test_open_creates_missing_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "world.db"

    async with SQLStorage(f"sqlite:///{path}") as storage:
        await storage.create_world(World(name="lab"))

    assert path.is_file()


async def test_database_under_a_regular_file_fails_with_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("I am a file")

    with pytest.raises(StorageError) as caught:
        async with SQLStorage(f"sqlite:///{blocker / 'world.db'}"):
            pass

    message = str(caught.value)
    assert "\n" not in message
    assert str(blocker) in message


async def test_file_that_is_not_a_database_fails_with_one_line(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is certainly not SQLite\x00\xff" * 200)

    with pytest.raises(StorageError) as caught:
        async with SQLStorage(f"sqlite:///{garbage}"):
            pass

    message = str(caught.value)
    assert "\n" not in message
    assert str(garbage) in message
    assert "not a database" in message


async def test_closed_storage_refuses_use(db_url: str) -> None:
    storage = SQLStorage(db_url)
    async with storage:
        await storage.create_world(World(name="lab"))

    with pytest.raises(StorageError, match="not open"):
        await storage.get_world("lab")


async def test_data_survives_reopening(db_url: str) -> None:
    async with SQLStorage(db_url) as storage:
        await storage.create_world(World(name="lab", turn_limit=3))
        await storage.append_messages("lab", [(None, user_message("c1", "kept"))])

    async with SQLStorage(db_url) as storage:
        assert (await storage.get_world("lab")).turn_limit == 3
        assert [m.content for m in await storage.transcript("lab", "c1")] == ["kept"]


# -- database URLs -------------------------------------------------------------


@pytest.fixture
def no_db_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv(DB_ENV_VAR, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("sqlite:///x.db", "sqlite:///x.db"),
        ("sqlite:////abs/x.db", "sqlite:////abs/x.db"),
        ("sqlite+aiosqlite:///x.db", "sqlite:///x.db"),
        ("sqlite+pysqlite:///x.db", "sqlite:///x.db"),
        ("postgresql://u:p@db.example:5432/aw", "postgresql+asyncpg://u:p@db.example:5432/aw"),
        ("postgres://u@localhost/aw", "postgresql+asyncpg://u@localhost/aw"),
        ("postgresql+asyncpg://u@localhost/aw", "postgresql+asyncpg://u@localhost/aw"),
    ],
)
def test_database_urls_map_to_the_drivers_we_run_on(no_db_env: Path, raw: str, expected: str) -> None:
    assert resolve_database_url(raw) == expected


def test_bare_path_becomes_an_absolute_sqlite_url(
    no_db_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(no_db_env)

    assert resolve_database_url("data/world.db") == f"sqlite:///{no_db_env}/data/world.db"
    assert resolve_database_url("~/w.db") == f"sqlite:///{no_db_env}/w.db"


def test_default_database_lives_in_the_home_directory(no_db_env: Path) -> None:
    assert resolve_database_url(None) == (
        f"sqlite:///{no_db_env}/.agentworld/agentworld.db"
    )


def test_env_var_supplies_the_url_and_an_explicit_one_wins(
    no_db_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DB_ENV_VAR, "postgresql://env@host/db")

    assert resolve_database_url(None) == "postgresql+asyncpg://env@host/db"
    assert resolve_database_url("sqlite:///cli.db") == "sqlite:///cli.db"


@pytest.mark.parametrize("raw", ["mysql://u@h/db", "http://example.com/db", "sqlite3:///x.db"])
def test_unsupported_scheme_is_invalid_input(no_db_env: Path, raw: str) -> None:
    scheme = raw.split("://")[0]

    with pytest.raises(InvalidInputError, match=scheme):
        resolve_database_url(raw)


async def test_storage_reads_the_env_var(no_db_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = no_db_env / "from-env.db"
    monkeypatch.setenv(DB_ENV_VAR, str(path))

    async with SQLStorage() as storage:
        await storage.create_world(World(name="lab"))

    assert path.is_file()
