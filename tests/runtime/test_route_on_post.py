"""A person's message routed in the transaction that posts it (issue 18).

When the poster claims the chat and the message is the chat's only work, the common route —
no hooks, one agent answers — is decided inside the post: the message joins that agent's
memory, the queued route becomes the agent's loop, and the agent's memory is read, all in
one commit, so the loop's first step needs no storage trip of its own. Everything else is
left to the route step as before. Real SQLite files, a real PostgreSQL server, real loopback
model servers.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.models import Agent, Chat, Message, World
from agentworld.models.work import InboxChange, Loop, Posted, Route
from agentworld.runtime.memory_cache import MemoryCache
from agentworld.runtime.route_step import single_loop
from agentworld.storage.sql import SQLStorage
from agentworld.storage.statement import Sql
from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from agentworld.testing.postgres import create_database


def said(content: str, sender: str = "human") -> Message:
    return Message(chat_id="c1", role="user", sender=sender, content=content)


async def seed(store: SQLStorage, world: str = "w", **settings: Any) -> None:
    await store.create_world(World(name=world, **settings))
    for name in ("a1", "a2"):
        await store.create_agent(Agent(world=world, name=name, provider="openai", model="m"))
    await store.create_chat(Chat(world=world, chat_id="c1"))


async def post(
    store: SQLStorage, message: Message, *, owner: str | None = "me", world: str = "w", route: Any = "decide"
) -> Posted:
    return await store.post_to_chat(
        world,
        message,
        reset_llm_calls=True,
        inbox=InboxChange("c1", append=(Route(message=message),)),
        claim_for=owner,
        claim_ttl=20.0,
        route=partial(single_loop, message) if route == "decide" else route,
    )


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(db_url) as store:
        await seed(store)
        yield store


async def test_a_claimed_post_to_one_agent_leaves_its_loop_and_reads_its_memory(storage: SQLStorage) -> None:
    message = said("@a1 hello")
    posted = await post(storage, message)

    assert posted.claimed and posted.first is not None and posted.taken_up is not None
    loop = posted.first.work
    assert isinstance(loop, Loop)
    assert (loop.agent, loop.answer_to, loop.reply_to, loop.fresh) == ("a1", "human", message.message_id, True)
    # What the loop starts from is what storage now holds, committed with the message.
    stored = await storage.memory("w", "a1", "c1")
    assert [(m.message_id, m.role, m.agent_id, m.content) for m in stored] == [
        (message.message_id, "user", "a1", "@a1 hello")
    ]
    assert posted.taken_up.agent.name == "a1"
    assert posted.taken_up.memory == stored
    assert (posted.taken_up.after_seq, posted.taken_up.last_seq) == (0, (await storage.memory_since("w", "a1", "c1", 0))[1])
    assert await storage.inbox.items("w", "c1") == [posted.first]
    assert [m.content for m in await storage.transcript("w", "c1")] == ["@a1 hello"]
    assert await storage.memory("w", "a2", "c1") == []


async def test_the_memory_read_starts_where_the_caller_says(storage: SQLStorage) -> None:
    first = await post(storage, said("@a1 one"))
    assert first.taken_up is not None and first.first is not None
    await storage.inbox.change("w", InboxChange("c1", current=first.first.item_id, becomes=()))
    await storage.in_transaction(lambda conn: conn.execute(Sql("DELETE FROM chat_leases")), write=True)
    second = said("@a1 two")
    posted = await storage.post_to_chat(
        "w", second, reset_llm_calls=True, inbox=InboxChange("c1", append=(Route(message=second),)),
        claim_for="me", claim_ttl=20.0, route=partial(single_loop, second),
        memory_after=lambda agent: first.taken_up.last_seq if agent == "a1" else 0,  # type: ignore[union-attr]
    )  # fmt: skip
    assert posted.taken_up is not None
    assert [m.content for m in posted.taken_up.memory] == ["@a1 two"]
    assert posted.taken_up.after_seq == first.taken_up.last_seq


@pytest.mark.parametrize("content", ["@a1 @a2 both of you", "nobody in particular"])
async def test_a_post_that_is_not_the_common_case_leaves_the_route_to_the_runner(
    storage: SQLStorage, content: str
) -> None:
    posted = await post(storage, said(content))
    assert posted.claimed and posted.taken_up is None
    assert posted.first is not None and isinstance(posted.first.work, Route)
    assert await storage.memory("w", "a1", "c1") == []


async def test_a_world_that_names_hooks_is_left_to_the_route_step(tmp_path: Path) -> None:
    async with SQLStorage(f"sqlite:///{tmp_path / 'h.db'}") as store:
        await seed(store, hooks=["somewhere:hook"])
        posted = await post(store, said("@a1 hello"))
        assert posted.taken_up is None and posted.first is not None
        assert isinstance(posted.first.work, Route)


async def test_no_decision_without_the_claim_or_with_earlier_work_queued(storage: SQLStorage) -> None:
    asked: list[str] = []

    def spy(message: Message, world: World, agents: list[Agent]) -> Any:
        asked.append(message.content)
        return single_loop(message, world, agents)  # it would take the message up

    await post(storage, said("@a1 one"), owner=None, route=None)  # queued, nobody runs it yet
    two = said("@a1 two")
    posted = await post(storage, two, route=partial(spy, two))  # claims, but work is ahead of it
    assert posted.claimed and posted.taken_up is None
    assert posted.first is not None and isinstance(posted.first.work, Route)
    assert posted.first.work.message.content == "@a1 one"
    # the decision was left to the route step: both routes queued in order, no loop, no memory
    items = await storage.inbox.items("w", "c1")
    assert [(type(i.work), i.work.message.content) for i in items if isinstance(i.work, Route)] == [
        (Route, "@a1 one"), (Route, "@a1 two")
    ]
    assert len(items) == 2
    assert await storage.memory("w", "a1", "c1") == []
    three = said("@a1 three")
    third = await post(storage, three, owner="someone else", route=partial(spy, three))  # held
    assert not third.claimed and third.taken_up is None
    assert "@a1 three" not in asked  # not even asked: the chat runs elsewhere


async def test_the_cache_takes_the_posts_read_only_where_it_still_stands(storage: SQLStorage) -> None:
    cache = MemoryCache(storage)
    posted = await post(storage, said("@a1 one"))
    assert posted.taken_up is not None
    agent, memory = cache.absorb("w", "c1", posted.taken_up) or (None, [])
    assert agent is not None and [m.content for m in memory] == ["@a1 one"]
    assert cache.last_seq("w", "a1", "c1") == posted.taken_up.last_seq
    # Absorbing the same read again would show it twice: the cache has moved on, so it refuses.
    assert cache.absorb("w", "c1", posted.taken_up) is None
    _, again = await cache.agent_and_memory("w", "a1", "c1")
    assert [m.content for m in again] == ["@a1 one"]


async def test_postgres_routes_in_the_post_too(postgres_server: str) -> None:
    url = create_database(postgres_server, f"routeonpost{os.getpid()}")
    async with SQLStorage(url) as store:
        name = f"rp{os.getpid()}"
        await seed(store, world=name)
        try:
            message = said("@a2 hi")
            posted = await post(store, message, world=name)
            assert posted.taken_up is not None and posted.taken_up.agent.name == "a2"
            assert [m.message_id for m in posted.taken_up.memory] == [message.message_id]
            cache = MemoryCache(store)
            assert cache.last_seq(name, "a2", "c1") == 0  # read whole there, every time
            absorbed = cache.absorb(name, "c1", posted.taken_up)
            assert absorbed is not None and absorbed[1] == posted.taken_up.memory
            # with that loop still queued, the next post is left to the route step
            later = await post(store, said("@a2 again"), world=name)
            assert later.claimed and later.taken_up is None and later.first == posted.first
            items = await store.inbox.items(name, "c1")
            assert [type(i.work) for i in items] == [Loop, Route]
        finally:
            await store.leases.release(name, "c1", "me")  # a world being run is not deleted
            await store.delete_world(name)


async def test_every_turn_of_a_chat_shows_the_model_the_conversation_once_in_order(tmp_path: Path) -> None:
    """Turns posted by two processes in turn: each request is the one before, plus its answer
    and the new question — whichever process's cache the post read from."""

    def answer(body: dict[str, Any]) -> Reply:
        return Reply.text(f"re: {body['messages'][-1]['content']}")

    db = f"sqlite:///{tmp_path / 'aw.db'}"
    with OpenAIWireServer(responder=answer) as server:
        async with AgentWorld(db) as one, AgentWorld(db) as two:
            await one.create_world("w", streaming=False)
            await one.create_agent("w", "a1", provider="openai", model="m", base_url=server.base_url,
                                   system_prompt="agent:a1")  # fmt: skip
            chat = (await one.new_chat("w")).chat_id
            for index, poster in enumerate([one, one, two, one, two, two]):
                result = await poster.send("w", f"@a1 q{index}", chat_id=chat, timeout=30)
                assert [m.content for m in result.messages] == [f"@a1 q{index}", f"re: @a1 q{index}"]
        asked = [r["messages"] for r in server.requests if r["messages"][0]["content"] == "agent:a1"]
    assert len(asked) == 6
    for earlier, later in zip(asked, asked[1:], strict=False):
        assert later[: len(earlier)] == earlier
        assert [m["role"] for m in later[len(earlier) :]] == ["assistant", "user"]
    assert [m["content"] for m in asked[-1] if m["role"] == "user"] == [f"@a1 q{i}" for i in range(6)]


async def test_hooks_named_in_settings_see_the_first_message_a_new_process_posts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = "async def shout(event, respond):\n    if getattr(event, 'message', None) and event.message.sender == 'human':"
    (tmp_path / "shouting.py").write_text(hook + " await respond('HOOKED: ' + event.message.content, sender='hookbot')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    db = f"sqlite:///{tmp_path / 'aw.db'}"
    with OpenAIWireServer() as server:
        async with AgentWorld(db) as setup:
            await setup.create_world("w", streaming=False, hooks=["shouting:shout"])
            await setup.create_agent("w", "a1", provider="openai", model="m", base_url=server.base_url)
        async with AgentWorld(db) as fresh:  # knows nothing of the world's hooks yet
            result = await fresh.send("w", "@a1 hi", timeout=30)
        assert result.messages[-1].content == "HOOKED: @a1 hi"
        assert [r for r in server.requests if "title" not in str(r["messages"][0]).lower()] == []
