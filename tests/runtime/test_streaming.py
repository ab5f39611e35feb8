"""Streaming events around model calls (SPEC L3, L5): start / chunk / end, persisted except chunks,
and a retried stream tells consumers to start over."""

from __future__ import annotations

from typing import Any

from agentworld.agent_world import AgentWorld
from agentworld.models.events import SSEEvent, WorldEvent
from agentworld.storage.event_log import EventLog
from agentworld.testing.openai_wire import OpenAIWireServer, Reply


async def _streamed(aw: AgentWorld) -> list[SSEEvent]:
    runtime = await aw.runtime("w")
    seen: list[WorldEvent] = []
    runtime.bus.subscribe(seen.append, kinds=["sse"])
    await aw.send("w", "@a1 tell me a story")
    return [e for e in seen if isinstance(e, SSEEvent)]


async def test_stream_events_carry_the_message_id_and_only_start_and_end_are_stored(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", streaming=True)
    server.enqueue(
        Reply.text("once upon a time", chunk_size=3, prompt_tokens=5, completion_tokens=4)
    )

    events = await _streamed(aw)

    assert [e.phase for e in events][0] == "start" and events[-1].phase == "end"
    chunks = [e.content for e in events if e.phase == "chunk"]
    assert "".join(chunks) == "once upon a time" and len(chunks) > 3
    (answer,) = [
        m
        for m in await aw.storage.transcript("w", (await aw.list_chats("w"))[0].chat_id)
        if m.role == "assistant"
    ]
    assert {e.message_id for e in events} == {answer.message_id}
    assert events[-1].usage is not None and events[-1].usage.output_tokens == 4
    stored = await aw.storage.list_events("w", kind="sse")
    assert [e["phase"] for e in stored] == ["start", "end"]
    # In the log the end comes right before the answer it ends: stored with it, in its step.
    logged = (await EventLog(aw.storage).after("w", 0)).events
    kinds = [(e.kind, e.document.get("phase") or e.document.get("message", {}).get("role")) for e in logged]
    assert kinds[-2:] == [("sse", "end"), ("message", "assistant")]


async def test_a_cut_stream_is_retried_and_consumers_are_told_to_start_over(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer, monkeypatch: Any
) -> None:
    monkeypatch.setenv("AGENTWORLD_LLM_RETRIES", "2")
    await make_world("a1", streaming=True)
    server.enqueue(
        Reply.text("a partial story that is cut", chunk_size=4, drop_stream_after=3),
        Reply.text("the whole story", chunk_size=4),
    )

    events = await _streamed(aw)

    phases = [e.phase for e in events]
    restart = phases.index("error")
    assert phases[restart + 1] == "start" and phases[-1] == "end"
    after = "".join(e.content for e in events[restart + 1 :] if e.phase == "chunk")
    assert after == "the whole story"
    chat = (await aw.list_chats("w"))[0].chat_id
    assert [m.content for m in await aw.storage.transcript("w", chat)][-1] == "the whole story"
