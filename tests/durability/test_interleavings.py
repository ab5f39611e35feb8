"""Property: however N posters interleave over one chat — each with its own runtime and its own
connection to the database, as separate processes would have — the transcript has the same
shape: every message answered exactly once, answers in the order of the messages they answer,
and each model request the continuation of the one before."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer, Reply

SEEDS = range(8)


@pytest.mark.parametrize("seed", SEEDS)
async def test_any_interleaving_of_posters_gives_one_answer_per_message_in_order(
    tmp_path: Path, seed: int
) -> None:
    """Each seed is one interleaving: 2–6 messages, each from one of three posters after a
    random pause; the model answers after a random delay."""
    rng = random.Random(seed)
    plan = [(rng.randrange(3), rng.uniform(0, 0.03)) for _ in range(rng.randint(2, 6))]

    def answer(body: dict[str, Any]) -> Reply:
        return Reply.text(f"answer to: {body['messages'][-1]['content']}", delay=rng.uniform(0, 0.01))

    with OpenAIWireServer(responder=answer) as server:
        await _run(f"sqlite:///{tmp_path / 'aw.db'}", server, plan)


async def _run(db: str, server: OpenAIWireServer, plan: list[tuple[int, float]]) -> None:
    async with AgentWorld(db) as setup:
        await setup.create_world("w", streaming=False, turn_limit=100)
        await setup.create_agent(
            "w", "a1", provider="openai", model="m", base_url=server.base_url, system_prompt="agent:a1"
        )
        chat = (await setup.new_chat("w")).chat_id
    posters = [AgentWorld(db) for _ in range(3)]
    for poster in posters:
        await poster.__aenter__()
    try:
        async def post(index: int, poster: int, wait: float) -> None:
            await asyncio.sleep(wait)
            await posters[poster].send("w", f"@a1 q{index}", chat_id=chat, timeout=60)

        await asyncio.gather(*(post(i, p, wait) for i, (p, wait) in enumerate(plan)))
        for poster in posters:  # a runner may still be naming the chat: let it finish
            await (await poster.runtime("w")).wait_until_idle()
        transcript = await posters[0].storage.transcript("w", chat)
    finally:
        for poster in posters:
            await poster.close()

    asked = [m for m in transcript if m.sender == "human"]
    answers = [m for m in transcript if m.sender == "a1"]
    assert len(asked) == len(plan) and len(answers) == len(plan)
    by_id = {m.message_id: m.content for m in asked}
    assert [by_id[a.reply_to_message_id or ""] for a in answers] == [m.content for m in asked]
    assert all(a.content == f"answer to: {by_id[a.reply_to_message_id or '']}" for a in answers)
    turns = [r["messages"] for r in server.requests if r["messages"][0]["content"] == "agent:a1"]
    assert len(turns) == len(plan)
    for before, after in zip(turns, turns[1:], strict=False):
        assert after[: len(before)] == before
        assert [m["role"] for m in after[len(before):]] == ["assistant", "user"]
