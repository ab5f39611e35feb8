"""Editing a person's message and deleting messages onward (SPEC K2), on SQLite and PostgreSQL:
what follows the message is gone everywhere — transcript, every agent's memory, the waiting
approvals and questions (answering one is refused as unknown), queued work, the event log's
message rows — the audit log keeps what was removed, the world answers the edited text with
nothing of the removed turn in the model's request, a chat another process runs is refused,
and a process that keeps memories cached never shows the model a turn another process removed.
Real parts: AgentWorld, the loopback OpenAI wire server, the CLI in subprocesses."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.errors import BusyError, NotEditableError, NotFoundError
from agentworld.models import Message
from agentworld.models.work import InboxChange, Route
from agentworld.storage.event_log import EventLog
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

SHELL = ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": "rm -rf build"}))
QUESTION = ToolCallSpec(
    name="ask_user", arguments=json.dumps({"question": "Which one?", "options": ["a", "b"]})
)


def requests_of(server: OpenAIWireServer, agent: str) -> list[list[dict[str, Any]]]:
    """The prompts the agent's model calls sent, in order."""
    return [r["messages"] for r in server.requests if r["messages"][0]["content"] == f"agent:{agent}"]


def said(messages: list[Message]) -> list[tuple[str, str | None]]:
    return [(m.sender, m.content) for m in messages]


async def test_an_edit_removes_the_pending_approval_and_the_world_answers_the_edited_text(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1", "a2")
    script.by_agent["a1"] = lambda body: (
        Reply.tools(SHELL) if "clean" in str(body["messages"][-1].get("content")) else
        Reply.text(f"a1 heard: {body['messages'][-1].get('content')}")
    )
    first = await aw.send("w", "@a1 @a2 hello")
    chat = first.chat_id
    asked = await aw.send("w", "@a1 clean the build", chat_id=chat)
    (approval,) = asked.pending_approvals
    human = asked.messages[0]

    edited = await aw.edit_message("w", human.message_id, "@a1 list the build", chat_id=chat)

    assert edited.chat_id == chat and edited.pending_approvals == []
    new = edited.messages[0]
    assert (new.sender, new.content) == ("human", "@a1 list the build")
    assert new.message_id != human.message_id
    assert said(edited.messages[1:]) == [("a1", "a1 heard: @a1 list the build")]
    with pytest.raises(NotFoundError, match="no approval request"):
        await aw.approve("w", approval.tool_call_id, decision="approve")
    assert await aw.approvals("w") == []
    prompt = json.dumps(requests_of(server, "a1")[-1])
    assert "list the build" in prompt and "clean the build" not in prompt and "rm -rf" not in prompt
    assert "hello" in prompt  # what came before the edited message stays
    transcript = await aw.transcript("w", chat)
    assert said(transcript) == [
        ("human", "@a1 @a2 hello"),
        ("a1", "a1 heard: @a1 @a2 hello"),
        ("a2", "a2 heard: @a1 @a2 hello"),
        ("human", "@a1 list the build"),
        ("a1", "a1 heard: @a1 list the build"),
    ]
    for agent in ("a1", "a2"):
        memory = json.dumps([m.to_json() for m in await aw.agent_memory("w", agent, chat_id=chat)])
        assert "clean the build" not in memory and approval.tool_call_id not in memory
    (entry,) = [e for e in await aw.audit_log("w") if e.event == "message_edited"]
    assert entry.actor == "human" and entry.chat_id == chat
    assert entry.detail is not None and entry.detail["messageId"] == human.message_id
    assert entry.detail["removed"] == len(asked.messages) and entry.detail["newMessageId"] == new.message_id
    assert [m["content"] for m in entry.detail["messages"]][0] == "@a1 clean the build"
    assert entry.detail["waitingCalls"] == [approval.tool_call_id]
    assert any(e.event == "request" and e.approval_id == approval.tool_call_id for e in await aw.audit_log("w"))


async def test_delete_onward_empties_memories_queue_and_budgets_and_refuses_the_question(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1", "a2")
    script.by_agent["a2"] = lambda body: (
        Reply.tools(QUESTION) if body["messages"][-1]["role"] == "user" else Reply.text("ok")
    )
    kept = await aw.send("w", "@a1 first")
    chat = kept.chat_id
    later = await aw.send("w", "@a1 @a2 second", chat_id=chat)
    (question,) = later.pending_questions
    queued = Message(chat_id=chat, role="user", sender="human", content="@a1 never answered")
    await aw.storage.inbox.change("w", InboxChange(chat, append=(Route(message=queued),)))
    await aw.storage.add_llm_call("w", "a1")
    a1_answer = next(m for m in later.messages if m.sender == "a1")

    removed = await aw.delete_messages("w", a1_answer.message_id, chat_id=chat)

    assert removed == len(later.messages) - 1
    assert said(await aw.transcript("w", chat)) == [*said(kept.messages), ("human", "@a1 @a2 second")]
    assert said(await aw.agent_memory("w", "a1", chat_id=chat)) == [
        *said(kept.messages), ("human", "@a1 @a2 second")
    ]  # its copy of the message that stays is kept; its answer is gone
    a2_memory = await aw.agent_memory("w", "a2", chat_id=chat)
    assert said(a2_memory) == [("human", "@a1 @a2 second")] and not any(m.tool_calls for m in a2_memory)
    assert await aw.storage.inbox.items("w", chat) == []
    assert all(a.llm_call_count == 0 for a in await aw.list_agents("w"))
    assert (await aw.get_chat("w", chat)).message_count == 3
    with pytest.raises(NotFoundError, match="no question"):
        await aw.answer("w", question.tool_call_id, "a")
    assert await aw.questions("w") == []
    (entry,) = [e for e in await aw.audit_log("w") if e.event == "messages_deleted"]
    assert entry.detail is not None and entry.detail["queuedWork"] == 1
    assert entry.detail["waitingCalls"] == [question.tool_call_id]


async def test_a_tool_result_goes_with_the_call_it_answers(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1")
    files = ToolCallSpec(name="list_files", arguments=json.dumps({"path": "."}))
    script.by_agent["a1"] = lambda body: (
        Reply.tools(files) if body["messages"][-1]["role"] == "user" else Reply.text("listed")
    )
    sent = await aw.send("w", "@a1 what is here?")
    call, result, answer = sent.messages[1:]
    assert call.tool_calls and result.role == "tool" and answer.content == "listed"

    assert await aw.delete_messages("w", result.message_id) == 3

    assert said(await aw.transcript("w", sent.chat_id)) == [("human", "@a1 what is here?")]
    assert said(await aw.agent_memory("w", "a1", chat_id=sent.chat_id)) == [("human", "@a1 what is here?")]
    assert [log.tool_name for log in await aw.tool_logs("w")] == ["list_files"]  # history stays


async def test_only_a_persons_message_is_edited_and_unknown_ones_are_refused(
    aw: AgentWorld, make_world: Any
) -> None:
    await make_world("a1")
    sent = await aw.send("w", "@a1 hi")
    other = await aw.new_chat("w")
    agent_message = sent.messages[1]

    with pytest.raises(NotEditableError, match="not a person's"):
        await aw.edit_message("w", agent_message.message_id, "changed", chat_id=sent.chat_id)
    with pytest.raises(NotFoundError, match="message 'msg_nope' not found"):
        await aw.delete_messages("w", "msg_nope", chat_id=sent.chat_id)
    with pytest.raises(NotFoundError):  # a message of another chat is unknown there
        await aw.delete_messages("w", agent_message.message_id, chat_id=other.chat_id)
    with pytest.raises(NotFoundError, match="chat 'chat_nope' not found"):
        await aw.delete_messages("w", agent_message.message_id, chat_id="chat_nope")
    assert len(await aw.transcript("w", sent.chat_id)) == 2


async def test_stream_readers_resuming_after_an_old_position_never_get_a_removed_message(
    aw: AgentWorld, make_world: Any
) -> None:
    await make_world("a1")
    log = EventLog(aw.storage)
    first = await aw.send("w", "@a1 keep this")
    start = await log.head("w")
    gone = await aw.send("w", "@a1 remove this", chat_id=first.chat_id)

    await aw.delete_messages("w", gone.messages[0].message_id, chat_id=first.chat_id)

    batch = await log.after("w", start)
    texts = json.dumps([e.document for e in batch.events])
    assert "remove this" not in texts
    (crud,) = [e.document for e in batch.events if e.kind == "crud" and e.document["entity"] == "message"]
    assert crud["operation"] == "delete" and crud["chatId"] == first.chat_id
    assert crud["data"] == {"messageIds": [m.message_id for m in gone.messages], "edited": False}
    assert crud["name"] == gone.messages[0].message_id
    everything = await log.after("w", 0)
    logged = {e.document["message"]["messageId"] for e in everything.events if e.kind == "message"}
    assert logged == {m.message_id for m in first.messages}
    again = await aw.send("w", "@a1 after", chat_id=first.chat_id)
    later = await log.after("w", batch.last_seq)
    assert [e.document["message"]["content"] for e in later.events if e.kind == "message"] == [
        m.content for m in again.messages
    ]


def _cli(db_url: str, home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", db_url, *args],
        capture_output=True, text=True, timeout=timeout,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "AGENTWORLD_LLM_RETRIES": "1", "NO_COLOR": "1"},
    )


async def test_a_chat_another_process_runs_is_refused_until_it_is_done(
    aw: AgentWorld, make_world: Any, script: Any, db_url: str, tmp_path: Path
) -> None:
    await make_world("a1")
    sent = await aw.send("w", "@a1 quick")
    chat = sent.chat_id
    script.by_agent["a1"] = lambda body: Reply.text("slow answer", delay=4.0)
    other = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentworld", "--db", db_url, "send", "w", "@a1 slow", "--chat", chat,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1"},
    )
    try:
        deadline = time.monotonic() + 30
        while await aw.storage.leases.holder("w", chat) is None:
            assert time.monotonic() < deadline, "the other process never ran the chat"
            await asyncio.sleep(0.05)

        with pytest.raises(BusyError, match="another process"):
            await aw.delete_messages("w", sent.messages[0].message_id, chat_id=chat)
        with pytest.raises(BusyError):
            await aw.edit_message("w", sent.messages[0].message_id, "@a1 changed", chat_id=chat)
        assert said(await aw.transcript("w", chat))[:2] == said(sent.messages)  # nothing removed
    finally:
        out, err = await asyncio.wait_for(other.communicate(), 60)
    assert other.returncode == 0, err.decode()
    assert "slow answer" in out.decode()
    assert await aw.delete_messages("w", sent.messages[0].message_id, chat_id=chat) == 4
    assert await aw.transcript("w", chat) == []


async def test_a_long_lived_process_never_shows_the_model_a_turn_another_process_removed(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer, db_url: str, tmp_path: Path
) -> None:
    await make_world("a1")
    first = await aw.send("w", "@a1 one")
    chat = first.chat_id
    removed = await aw.send("w", "@a1 secret turn", chat_id=chat)

    done = await asyncio.to_thread(
        _cli, db_url, tmp_path, "message", "delete", "w", removed.messages[0].message_id,
        "--chat", chat, "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"chatId": chat, "removed": 2}

    again = await aw.send("w", "@a1 three", chat_id=chat)

    assert said(again.messages) == [("human", "@a1 three"), ("a1", "a1 heard: @a1 three")]
    prompt = requests_of(server, "a1")[-1]
    assert [m["content"] for m in prompt[1:]] == ["@a1 one", "a1 heard: @a1 one", "@a1 three"]


async def test_a_cut_stops_this_processs_own_running_turn_first(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer
) -> None:
    await make_world("a1")
    first = await aw.send("w", "@a1 one")
    chat = first.chat_id
    script.by_agent["a1"] = lambda body: Reply.text("too late", delay=3.0)
    running = asyncio.create_task(aw.send("w", "@a1 slow", chat_id=chat))
    deadline = time.monotonic() + 20
    while len(requests_of(server, "a1")) < 2:  # the slow turn's model call is in flight
        assert time.monotonic() < deadline, "the slow turn never started"
        await asyncio.sleep(0.02)
    slow = (await aw.transcript("w", chat))[-1]
    assert slow.content == "@a1 slow"

    script.by_agent["a1"] = lambda body: Reply.text(f"a1 heard: {body['messages'][-1]['content']}")
    edited = await aw.edit_message("w", slow.message_id, "@a1 quick", chat_id=chat)
    await asyncio.wait_for(running, 10)

    assert said(edited.messages) == [("human", "@a1 quick"), ("a1", "a1 heard: @a1 quick")]
    await asyncio.sleep(3.2)  # the cancelled call's answer never lands
    assert said(await aw.transcript("w", chat)) == [*said(first.messages), *said(edited.messages)]


async def test_an_approval_asked_after_the_edited_message_goes_with_it(
    aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[[rule]]\ntoolName = "shell_cmd"\ncommandPrefix = ["sleep"]\ndecision = "allow"\npriority = 100\n'
    )
    await make_world("a1", working_dir=str(tmp_path), policy_files=[str(policy)])
    slow = ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": "sleep 1"}))
    script.by_agent["a1"] = lambda body: (
        Reply.tools(slow, SHELL) if "work" in str(body["messages"][-1].get("content"))
        else Reply.text("ok")
    )
    running = asyncio.create_task(aw.send("w", "@a1 work"))
    deadline = time.monotonic() + 20
    while not [log for log in await aw.tool_logs("w") if log.status == "running"]:
        assert time.monotonic() < deadline, "the first call never started"
        await asyncio.sleep(0.02)
    meanwhile = await aw.post("w", "just a note")  # said while the batch runs
    sent = await asyncio.wait_for(running, 20)
    (approval,) = sent.pending_approvals  # asked after the note

    await aw.edit_message("w", meanwhile.message_id, "another note", chat_id=sent.chat_id)

    with pytest.raises(NotFoundError):
        await aw.approve("w", approval.tool_call_id, decision="approve")
    assert await aw.approvals("w") == []
    assert said(await aw.transcript("w", sent.chat_id))[-2:] == [("human", "another note"), ("a1", "ok")]
    memory = await aw.agent_memory("w", "a1", chat_id=sent.chat_id)
    (batch,) = [m for m in memory if m.tool_calls]
    results = {m.tool_call_id: m.content or "" for m in memory if m.role == "tool"}
    assert set(results) == {c.id for c in batch.tool_calls or ()}  # the memory stays whole
    assert all("human took the conversation back" in text for text in results.values())
    assert [log.status for log in await aw.tool_logs("w")] == ["ok"]  # the call that ran stays logged
