"""Branching a chat from one of its messages (SPEC K1), through the Python API on SQLite and
PostgreSQL: the branch's transcript and every agent's memory end exactly at that message, the
source is left byte for byte as it was, and the next message in the branch reaches the model
(a loopback OpenAI server, which records each request) with exactly that history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.documents import chat_doc
from agentworld.errors import NotFoundError
from agentworld.models import Message
from agentworld.storage.branches import BRANCHED
from agentworld.storage.event_log import EventLog
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

TITLE = "A generated title"
"""The name the scripted titler gives a chat (``tests/conftest.py``)."""


def said(messages: list[Message]) -> list[tuple[Any, ...]]:
    """What the messages say, without their ids and chat (a branch's copies have new ones)."""
    return [
        (
            m.role, m.sender, m.agent_id, m.content, m.tool_call_id,
            [(c.id, c.function.name, c.function.arguments) for c in m.tool_calls or ()],
        )
        for m in messages
    ]


def asked(server: OpenAIWireServer, agent: str) -> list[list[dict[str, Any]]]:
    """The messages of every request the agent's model was sent, in order."""
    return [
        body["messages"] for body in server.requests
        if body["messages"][0].get("content") == f"agent:{agent}"
    ]


async def listing(aw: AgentWorld, world: str, chat_id: str) -> str:
    """Everything stored of a chat, as text: its document, transcript, every agent's memory of
    it, its waiting calls, queued work and tool logs."""
    chat = await aw.get_chat(world, chat_id)
    memories = {
        agent.name: [m.to_json() for m in await aw.storage.memory(world, agent.name, chat_id)]
        for agent in await aw.list_agents(world)
    }
    waiting = await aw.storage.pending.find(world, chat_id=chat_id, status=None)
    logs = await aw.storage.tool_logs.find(world, chat_id=chat_id)
    return json.dumps(
        {
            "chat": chat_doc(chat),
            "transcript": [m.to_json() for m in await aw.transcript(world, chat_id)],
            "memories": memories,
            "waiting": [call.model_dump(mode="json") for call in waiting],
            "inbox": [repr(item) for item in await aw.storage.inbox.items(world, chat_id)],
            "logs": [repr(entry) for entry in logs],
        },
        sort_keys=True,
    )


def same_links(source: list[Message], branch: list[Message]) -> None:
    """The branch's messages have ids of their own, and reply to the copies of what the
    source's replied to."""
    assert not {m.message_id for m in source} & {m.message_id for m in branch}
    position = {m.message_id: i for i, m in enumerate(source)}
    for original, copy in zip(source, branch, strict=True):
        replied = original.reply_to_message_id
        expected = branch[position[replied]].message_id if replied in position else replied
        assert copy.reply_to_message_id == expected


async def ten_messages(aw: AgentWorld, make_world: Any) -> tuple[str, dict[str, list[Message]]]:
    """A chat of ten messages between a person and agents a1 and a2, and each agent's memory
    as it was when the chat held its first three."""
    await make_world("a1", "a2")
    chat = (await aw.send("w", "@a1 @a2 first", timeout=30)).chat_id
    at_three = {agent: await aw.storage.memory("w", agent, chat) for agent in ("a1", "a2")}
    for text in ("@a1 second", "@a2 third", "@a1 @a2 fourth"):
        await aw.send("w", text, chat_id=chat, timeout=30)
    assert len(await aw.transcript("w", chat)) == 10
    return chat, at_three


async def test_a_branch_from_the_third_of_ten_messages_holds_those_three_and_the_memories_of_then(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer
) -> None:
    chat, at_three = await ten_messages(aw, make_world)
    source = await aw.transcript("w", chat)
    before = await listing(aw, "w", chat)

    branch = await aw.branch_chat("w", source[2].message_id)

    assert await listing(aw, "w", chat) == before
    copied = await aw.transcript("w", branch.chat_id)
    assert said(copied) == said(source[:3])
    same_links(source[:3], copied)
    for agent, memory in at_three.items():
        assert said(await aw.storage.memory("w", agent, branch.chat_id)) == said(memory)
    assert (branch.name, branch.message_count) == (f"{TITLE} (branch)", 3)
    assert branch.branch_of is not None
    assert (branch.branch_of.chat_id, branch.branch_of.message_id) == (chat, source[2].message_id)
    assert (await aw.get_world("w")).current_chat_id == branch.chat_id

    # Each agent's model is asked with the history it had when the chat held three messages:
    # what it was sent for the source's next message to it, but that message.
    before_send = {agent: asked(server, agent) for agent in ("a1", "a2")}
    await aw.send("w", "@a1 @a2 once more", chat_id=branch.chat_id, timeout=30)

    for agent, earlier in before_send.items():
        (request,) = asked(server, agent)[len(earlier):]
        assert request[:-1] == earlier[1][:-1]
        assert request[-1] == {"role": "user", "content": "@a1 @a2 once more"}
    assert await listing(aw, "w", chat) == before
    assert (await aw.get_chat("w", branch.chat_id)).name == f"{TITLE} (branch)"  # never retitled


async def test_a_branch_from_a_persons_message_holds_it_in_the_memory_of_whom_it_called_on(
    aw: AgentWorld, make_world: Any, server: OpenAIWireServer
) -> None:
    chat, at_three = await ten_messages(aw, make_world)
    source = await aw.transcript("w", chat)
    assert (source[3].sender, source[3].content) == ("human", "@a1 second")
    before = await listing(aw, "w", chat)

    branch = await aw.branch_chat("w", source[3].message_id, chat_id=chat)

    assert await listing(aw, "w", chat) == before
    assert said(await aw.transcript("w", branch.chat_id)) == said(source[:4])
    a1_source = await aw.storage.memory("w", "a1", chat)
    assert said(await aw.storage.memory("w", "a1", branch.chat_id)) == said(a1_source[:3])
    assert a1_source[2].content == "@a1 second"
    assert said(await aw.storage.memory("w", "a2", branch.chat_id)) == said(at_three["a2"])

    earlier = asked(server, "a1")
    await aw.send("w", "@a1 go on", chat_id=branch.chat_id, timeout=30)

    (request,) = asked(server, "a1")[len(earlier):]
    assert request == [*earlier[1], {"role": "user", "content": "@a1 go on"}]
    assert await listing(aw, "w", chat) == before


def reads_notes(body: dict[str, Any]) -> Reply:
    """Read notes.txt when asked to; say what the last message was otherwise."""
    last = body["messages"][-1]
    if last["role"] == "user" and "read" in last["content"]:
        return Reply.tools(ToolCallSpec(name="read_file", arguments='{"path": "notes.txt"}', id="call_notes"))
    return Reply.text(f"{last['role']} said {last['content']}")


@pytest.fixture
async def tool_chat(aw: AgentWorld, make_world: Any, script: Any, tmp_path: Path) -> str:
    """A chat where a1 read a file: the person's message, the call, its result, the answer."""
    (tmp_path / "notes.txt").write_text("the notes")
    await make_world("a1", working_dir=str(tmp_path))
    script.by_agent["a1"] = reads_notes
    sent = await aw.send("w", "@a1 read the notes", timeout=30)
    assert [m.role for m in await aw.transcript("w", sent.chat_id)] == ["user", "assistant", "tool", "assistant"]
    return sent.chat_id


async def test_a_branch_from_a_tool_result_ends_its_memory_with_that_result(
    aw: AgentWorld, tool_chat: str, server: OpenAIWireServer
) -> None:
    source = await aw.transcript("w", tool_chat)
    before = await listing(aw, "w", tool_chat)

    branch = await aw.branch_chat("w", source[2].message_id)

    assert await listing(aw, "w", tool_chat) == before
    copied = await aw.transcript("w", branch.chat_id)
    assert said(copied) == said(source[:3])
    same_links(source[:3], copied)
    memory = await aw.storage.memory("w", "a1", tool_chat)
    assert said(await aw.storage.memory("w", "a1", branch.chat_id)) == said(memory[:3])

    earlier = asked(server, "a1")
    await aw.send("w", "@a1 and then?", chat_id=branch.chat_id, timeout=30)

    (request,) = asked(server, "a1")[len(earlier):]
    # The history the source's model call after the result had, and the new message.
    assert request == [*earlier[1], {"role": "user", "content": "@a1 and then?"}]
    assert request[-2]["tool_call_id"] == "call_notes"
    assert json.loads(request[-2]["content"])["content"] == "the notes"
    assert await aw.storage.tool_logs.find("w", chat_id=branch.chat_id) == []
    assert await listing(aw, "w", tool_chat) == before


async def test_a_call_cut_off_from_its_result_is_answered_in_the_branch_and_never_run_there(
    aw: AgentWorld, tool_chat: str, server: OpenAIWireServer
) -> None:
    source = await aw.transcript("w", tool_chat)
    before = await listing(aw, "w", tool_chat)

    branch = await aw.branch_chat("w", source[1].message_id)

    assert await listing(aw, "w", tool_chat) == before
    assert said(await aw.transcript("w", branch.chat_id))[:1] == said(source[:1])
    user, call, result = await aw.storage.memory("w", "a1", branch.chat_id)
    (renamed,) = call.tool_calls or ()
    assert renamed.id != "call_notes" and renamed.function.name == "read_file"
    assert (result.role, result.tool_call_id, result.reply_to_message_id) == ("tool", renamed.id, call.message_id)
    assert json.loads(result.content or "") == {"error": BRANCHED}

    earlier = asked(server, "a1")
    await aw.send("w", "@a1 and then?", chat_id=branch.chat_id, timeout=30)

    (request,) = asked(server, "a1")[len(earlier):]
    assert [m["role"] for m in request] == ["system", "user", "assistant", "tool", "user"]
    assert request[2]["tool_calls"][0]["id"] == request[3]["tool_call_id"] == renamed.id
    assert json.loads(request[3]["content"]) == {"error": BRANCHED}
    assert await aw.storage.tool_logs.find("w", chat_id=branch.chat_id) == []
    assert await listing(aw, "w", tool_chat) == before


def touches(body: dict[str, Any]) -> Reply:
    """Ask to touch a file when told to; report what came back otherwise."""
    last = body["messages"][-1]
    if last["role"] == "user" and "touch" in last["content"]:
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments='{"command": "touch made"}', id="call_touch"))
    return Reply.text(f"{last['role']} said {last['content']}")


async def test_an_approval_waiting_in_the_source_stays_there_and_is_answered_there_alone(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    await make_world("a1", working_dir=str(tmp_path))
    script.by_agent["a1"] = touches
    sent = await aw.send("w", "@a1 touch it", timeout=30)
    (approval,) = sent.pending_approvals
    source = await aw.transcript("w", sent.chat_id)
    assert source[-1].tool_calls and source[-1].tool_calls[0].id == approval.tool_call_id
    before = await listing(aw, "w", sent.chat_id)

    branch = await aw.branch_chat("w", source[-1].message_id)

    assert await listing(aw, "w", sent.chat_id) == before
    assert [a.tool_call_id for a in await aw.approvals("w")] == [approval.tool_call_id]
    assert await aw.approvals("w", chat_id=branch.chat_id) == []
    user, call, result, request = await aw.storage.memory("w", "a1", branch.chat_id)
    (touch,), (asking,) = call.tool_calls or (), request.tool_calls or ()
    # The branch's calls are its own: nothing of it answers, or is answered by, the source.
    assert touch.id != "call_touch" and asking.id != approval.tool_call_id
    assert asking.id.startswith("approval_") and json.loads(asking.function.arguments)["toolCallId"] == touch.id
    assert (result.tool_call_id, json.loads(result.content or "")) == (touch.id, {"error": BRANCHED})

    earlier = asked(server, "a1")
    in_branch = await aw.send("w", "@a1 leave it", chat_id=branch.chat_id, timeout=30)

    assert in_branch.pending_approvals == []
    (asked_in_branch,) = asked(server, "a1")[len(earlier):]
    assert [m["role"] for m in asked_in_branch] == ["system", "user", "assistant", "tool", "user"]
    assert asked_in_branch[2]["tool_calls"][0]["id"] == touch.id  # the approval request is not shown
    branch_listing = await listing(aw, "w", branch.chat_id)

    done = await aw.approve("w", approval.tool_call_id, decision="approve", timeout=30)

    assert (tmp_path / "made").exists()
    assert done.chat_id == sent.chat_id
    assert [m.role for m in done.messages] == ["tool", "tool", "assistant"]  # answer, result, reply
    assert '"exit_code": 0' in (done.messages[-1].content or "")
    assert await listing(aw, "w", branch.chat_id) == branch_listing
    assert await aw.approvals("w") == []


async def test_an_unknown_message_or_one_of_another_chat_makes_no_branch(
    aw: AgentWorld, make_world: Any
) -> None:
    await make_world("a1")
    first = await aw.send("w", "@a1 one", timeout=30)
    other = await aw.new_chat("w")
    chats = await aw.list_chats("w")

    with pytest.raises(NotFoundError, match="msg_nope"):
        await aw.branch_chat("w", "msg_nope")
    with pytest.raises(NotFoundError, match="not found in chat"):
        await aw.branch_chat("w", first.messages[0].message_id, chat_id=other.chat_id)
    with pytest.raises(NotFoundError, match="chat_nope"):
        await aw.branch_chat("w", first.messages[0].message_id, chat_id="chat_nope")
    with pytest.raises(NotFoundError, match="world"):
        await aw.branch_chat("nope", first.messages[0].message_id)

    assert await aw.list_chats("w") == chats


async def test_a_branch_is_announced_and_its_messages_are_in_the_event_log(
    aw: AgentWorld, make_world: Any
) -> None:
    await make_world("a1")
    sent = await aw.send("w", "@a1 one", timeout=30)
    head = await EventLog(aw.storage).head("w")

    branch = await aw.branch_chat("w", sent.messages[-1].message_id)
    first_copy = (await aw.transcript("w", branch.chat_id))[0].message_id
    again = await aw.branch_chat("w", first_copy)

    logged = (await EventLog(aw.storage).after("w", head)).events
    crud = [e.document for e in logged if e.kind == "crud"]
    assert [(e["operation"], e["entity"], e["name"], e["chatId"], e["data"]) for e in crud] == [
        ("create", "chat", branch.chat_id, branch.chat_id,
         {"branchOf": {"chatId": sent.chat_id, "messageId": sent.messages[-1].message_id}}),
        ("create", "chat", again.chat_id, again.chat_id,
         {"branchOf": {"chatId": branch.chat_id, "messageId": first_copy}}),
    ]
    copied = [e.document["message"] for e in logged if e.kind == "message" and e.chat_id == branch.chat_id]
    assert copied == [m.to_json() for m in await aw.transcript("w", branch.chat_id)]
    page = await aw.transcript_page("w", branch.chat_id)
    assert [m.content for m in page.messages] == [m.content for m in sent.messages]
    assert again.name == f"{TITLE} (branch) (branch)"


async def test_a_branch_of_a_chat_with_the_longest_name_keeps_its_start_and_says_it_is_a_branch(
    aw: AgentWorld, make_world: Any
) -> None:
    await make_world("a1")
    sent = await aw.send("w", "@a1 one", timeout=30)
    await aw.rename_chat("w", sent.chat_id, "n" * 200)

    branch = await aw.branch_chat("w", sent.messages[0].message_id)

    stored = await aw.get_chat("w", branch.chat_id)
    assert stored.name == branch.name == "n" * 191 + " (branch)"
