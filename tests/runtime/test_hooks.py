"""The on_event interception point (SPEC E2, E3) and streaming callbacks (E5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentworld.agent_world import AgentWorld
from agentworld.models.events import MessageEvent, SystemEvent, ToolCallEvent, WorldEvent
from agentworld.runtime.hook_dispatch import Respond
from agentworld.runtime.hooks import HookEvent
from agentworld.runtime.streaming import StreamCallbacks, StreamChunk, StreamedToolCall
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec


def turns(server: OpenAIWireServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["messages"][0]["content"] == "agent:a1"]


async def test_a_rewrite_is_what_the_agents_answer_while_the_transcript_keeps_what_was_said(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1")
    runtime = await aw.runtime("w")
    watched: list[WorldEvent] = []
    runtime.bus.subscribe(watched.append, kinds=["message", "system"])

    @runtime.on_event
    def censor(event: HookEvent, respond: Respond) -> HookEvent | None:
        if isinstance(event, MessageEvent) and "password" in (event.message.content or ""):
            text = (event.message.content or "").replace("hunter2", "[hidden]")
            return event.model_copy(update={"message": event.message.model_copy(update={"content": text})})
        return None

    result = await aw.send("w", "@a1 my password is hunter2")

    # Processed: the model and the agent's memory have the rewrite.
    assert turns(server)[0]["messages"][-1]["content"] == "@a1 my password is [hidden]"
    memory = await aw.storage.memory("w", "a1", result.chat_id)
    assert memory[0].content == "@a1 my password is [hidden]"
    # Said: the transcript (and the subscribers, who saw it stored) keep the original.
    transcript = await aw.storage.transcript("w", result.chat_id)
    assert transcript[0].content == "@a1 my password is hunter2"
    assert memory[0].message_id == transcript[0].message_id
    said = [e for e in watched if isinstance(e, MessageEvent) and e.message.sender == "human"]
    assert [e.message.content for e in said] == ["@a1 my password is hunter2"]
    # Both, for an auditor: the audit log entry and a system event name the two texts.
    (entry,) = [e for e in await aw.audit_log("w") if e.event == "rewrite"]
    assert entry.actor.endswith("censor") and entry.chat_id == result.chat_id
    assert entry.detail is not None
    assert entry.detail["messageId"] == transcript[0].message_id
    assert entry.detail["processed"] == "@a1 my password is [hidden]"
    assert entry.detail["used"] is True
    notes = [e for e in watched if isinstance(e, SystemEvent) and "rewrite" in e.context]
    assert notes[0].level == "info" and transcript[0].message_id in notes[0].text


async def test_hooks_see_tool_results_and_system_notes_and_may_answer_them(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path
) -> None:
    await make_world("a1", working_dir=str(tmp_path))
    (tmp_path / "notes.txt").write_text("hello")
    script.by_agent["a1"] = lambda body: (
        Reply(status=400, error_message="the model refuses")  # the failure is a system note
        if body["messages"][-1]["role"] == "tool"
        else Reply.tools(ToolCallSpec(name="list_files", arguments="{}"))
    )
    runtime = await aw.runtime("w")
    seen: list[tuple[str, str]] = []
    warnings: list[WorldEvent] = []
    runtime.bus.subscribe(warnings.append, kinds=["system"])

    async def watch(event: HookEvent, respond: Respond) -> HookEvent | None:
        if not isinstance(event, MessageEvent):
            return None
        seen.append((event.message.role, event.message.sender))
        if event.message.role == "tool":  # a rewrite of a result already used changes nothing
            return event.model_copy(
                update={"message": event.message.model_copy(update={"content": "forged"})}
            )
        if event.message.sender == "system" or event.message.role == "system":
            await respond("the operator was told", sender="ops-bot")
        return None

    runtime.on_event(watch)
    result = await aw.send("w", "@a1 list the files")

    roles = {role for role, _ in seen}
    assert "tool" in roles, seen
    assert any(sender == "system" or role == "system" for role, sender in seen), seen
    # The hook's answer to the system note was published like any message.
    assert any(m.sender == "ops-bot" and m.content == "the operator was told" for m in result.messages)
    # The forged tool result never reached the model nor the transcript; the attempt is on record.
    transcript = await aw.storage.transcript("w", result.chat_id)
    assert all(m.content != "forged" for m in transcript)
    assert "notes.txt" in next(m.content or "" for m in transcript if m.role == "tool")
    audited = [e for e in await aw.audit_log("w") if e.event == "rewrite"]
    assert audited and all((e.detail or {}).get("used") is False for e in audited)
    assert any(
        isinstance(e, SystemEvent) and e.level == "warning" and "changes nothing" in e.text
        for e in warnings
    )


async def test_respond_on_a_message_skips_the_model_and_routes_the_reply(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", "a2")
    runtime = await aw.runtime("w")
    seen: list[str] = []

    async def faq(event: HookEvent, respond: Respond) -> None:
        seen.append(event.kind)
        if isinstance(event, MessageEvent) and event.message.content == "@a1 opening hours?":
            await respond("@a2 we open at nine", sender="faq-bot")

    runtime.on_event(faq)
    result = await aw.send("w", "@a1 opening hours?")

    assert [t["messages"][0]["content"] for t in turns(server)] == []  # a1 was never called
    assert [(m.sender, m.content) for m in result.messages][:2] == [
        ("human", "@a1 opening hours?"),
        ("faq-bot", "@a2 we open at nine"),
    ]
    assert result.messages[-1].sender == "a2"  # the programmatic message was routed like any other


async def test_respond_on_tool_calls_skips_them_or_runs_them_first(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path
) -> None:
    await make_world("a1", working_dir=str(tmp_path))
    marker = tmp_path / "side-effect"
    script.by_agent["a1"] = lambda body: (
        Reply.text("done") if body["messages"][-1]["role"] == "tool"
        else Reply.tools(ToolCallSpec(name="list_files", arguments="{}", id="call_ls"))
    )
    runtime = await aw.runtime("w")
    mode = {"enqueue_after": "immediately"}

    async def intercept(event: HookEvent, respond: Respond) -> None:
        if isinstance(event, ToolCallEvent):
            marker.write_text("seen")  # the hook itself is allowed side effects; the tool is not run
            await respond("handled by the application", enqueue_after=mode["enqueue_after"])  # type: ignore[arg-type]

    runtime.on_event(intercept)
    skipped = await aw.send("w", "@a1 list the files")
    skipped_result = [m for m in skipped.messages if m.tool_call_id == "call_ls"]
    assert json.loads(skipped_result[0].content or "{}") == {
        "skipped": "the application answered in place of this call"
    }
    assert skipped.messages[-1].content == "handled by the application"
    assert await aw.tool_logs("w") == []  # nothing executed

    mode["enqueue_after"] = "tool_results"
    ran = await aw.send("w", "@a1 list the files again")
    contents = [m.content or "" for m in ran.messages]
    # The model repeats the id "call_ls"; the runtime stores the repeat under a fresh id.
    result_index = next(i for i, m in enumerate(ran.messages) if m.role == "tool")
    assert "side-effect" in contents[result_index]  # the tool really ran...
    assert contents[-1] == "handled by the application"  # ...and the programmatic message follows it
    assert [log.status for log in await aw.tool_logs("w")] == ["ok"]


async def test_a_raising_hook_is_reported_and_the_default_path_continues(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1")
    runtime = await aw.runtime("w")
    events: list[WorldEvent] = []
    runtime.bus.subscribe(events.append, kinds=["system"])
    runtime.on_event(lambda event, respond: 1 / 0)

    result = await aw.send("w", "@a1 hi")

    assert result.messages[-1].sender == "a1"
    assert any(isinstance(e, SystemEvent) and e.context.get("source") == "hook" for e in events)


async def test_hooks_see_persisted_events_in_order(aw: AgentWorld, make_world: Any) -> None:
    await make_world("a1")
    runtime = await aw.runtime("w")
    stored_when_hooked: list[bool] = []

    async def check(event: HookEvent, respond: Respond) -> None:
        if isinstance(event, MessageEvent):
            transcript = await aw.storage.transcript("w", event.message.chat_id)
            stored_when_hooked.append(any(m.message_id == event.message.message_id for m in transcript))

    runtime.on_event(check)
    await aw.send("w", "@a1 hello")
    assert stored_when_hooked and all(stored_when_hooked)


async def test_streaming_callbacks_get_tokens_content_and_tool_calls(
    db_url: str, make_world: Any, script: Any, server: OpenAIWireServer, aw: AgentWorld
) -> None:
    await make_world("a1", streaming=True)
    await aw.close()
    tokens: list[str] = []
    contents: list[str] = []
    calls: list[str] = []
    callbacks = StreamCallbacks(
        on_token=lambda c: tokens.append(c.text) if isinstance(c, StreamChunk) else None,
        on_content=lambda c: contents.append(c.text),
        on_tool_call=lambda c: calls.append(c.tool_call.function.name) if isinstance(c, StreamedToolCall) else None,
    )
    script.by_agent["a1"] = lambda body: (
        Reply.text("all done here", chunk_size=3) if body["messages"][-1]["role"] == "tool"
        else Reply.tools(ToolCallSpec(name="list_files", arguments="{}"))
    )
    async with AgentWorld(db_url, streaming=callbacks) as streamed:
        await streamed.send("w", "@a1 go")
    assert "".join(tokens) == "all done here" and len(tokens) > 2
    assert contents[-1] == "all done here" and contents[0] == tokens[0]
    assert calls == ["list_files"]


async def test_hooks_named_in_world_settings_are_loaded_by_import_path(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer, tmp_path: Path, monkeypatch: Any
) -> None:
    (tmp_path / "my_hooks.py").write_text(
        "async def shout(event, respond):\n"
        "    if event.kind == 'message' and event.message.sender == 'human':\n"
        "        await respond('HOOKED: ' + event.message.content, sender='hookbot')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    await make_world("a1", hooks=["my_hooks:shout"])
    result = await aw.send("w", "@a1 hi")
    assert result.messages[-1].content == "HOOKED: @a1 hi"
    assert turns(server) == []
