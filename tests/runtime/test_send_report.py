"""What a ``send`` reports, read in the write that lets its chat go (issue 18).

A command that waits for its chat (``send``, ``approve``, ``respond``) ends by reporting the
transcript after its message and the approvals still waiting. The runtime reads both in the
transaction of the step that lets the chat go, so the command needs no read of its own — but
only while that is still what a read would find: once this process writes anything after it,
the command reads for itself. Real SQLite files, a real loopback model server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import Reply, ToolCallSpec


async def _posted_and_idle(aw: AgentWorld, chat: str, text: str) -> tuple[Any, int]:
    """Post into ``chat`` asking for a report, wait until the chat is idle; (runtime, start)."""
    runtime = await aw.runtime("w")
    _message, posted = await runtime.post(chat, text)
    runtime.want_report(chat, posted.after_seq)
    await runtime.wait_until_idle(chat)
    return runtime, posted.after_seq


async def test_the_write_that_lets_the_chat_go_reads_what_a_read_would(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1")
    script.by_agent["a1"] = lambda body: Reply.text(f"re: {body['messages'][-1]['content']}")
    chat = (await aw.new_chat("w")).chat_id
    for text in ("@a1 first", "@a1 second"):  # the first exchange also names the chat
        runtime, start = await _posted_and_idle(aw, chat, text)

        report = runtime.take_report(chat, start)

        assert report is not None
        assert [m.content for m in report.messages] == [text, f"re: {text}"]
        read, waiting = await aw.storage.since_with_approvals("w", chat, start)
        assert report.messages == read and report.waiting == waiting == []
        assert runtime.take_report(chat, start) is None  # handed over once


async def test_a_report_names_the_approvals_still_waiting(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1")
    script.by_agent["a1"] = lambda body: Reply(
        tool_calls=(ToolCallSpec("shell_cmd", json.dumps({"command": "rm -rf ./build"})),)
    )
    chat = (await aw.new_chat("w")).chat_id
    await aw.send("w", "@a1 warm up", chat_id=chat)  # its approval waits too
    runtime, start = await _posted_and_idle(aw, chat, "@a1 clean the build")

    report = runtime.take_report(chat, start)

    assert report is not None
    read, waiting = await aw.storage.since_with_approvals("w", chat, start)
    assert report.messages == read and len(report.waiting) == 2
    assert {a.tool_call_id for a in report.waiting} == {a.tool_call_id for a in waiting}
    assert all(a.tool_name == "shell_cmd" for a in report.waiting)


async def _answered_once(aw: AgentWorld, make_world: Any, script: Any) -> tuple[Any, str, int]:
    """A chat answered once with a report asked for: (runtime, chat, start)."""
    await make_world("a1")
    script.by_agent["a1"] = lambda body: Reply.text("done")
    chat = (await aw.new_chat("w")).chat_id
    runtime, start = await _posted_and_idle(aw, chat, "@a1 go")
    return runtime, chat, start


async def test_any_later_write_of_this_process_makes_the_command_read_again(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    runtime, chat, start = await _answered_once(aw, make_world, script)

    await aw.rename_chat("w", chat, "renamed meanwhile")  # a write after the chat was let go

    assert runtime.take_report(chat, start) is None


async def test_a_report_from_another_position_is_not_handed_over(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    runtime, chat, start = await _answered_once(aw, make_world, script)

    assert runtime.take_report(chat, start - 1) is None
    assert runtime.take_report(chat, start) is None  # the wish was forgotten with it


async def test_a_send_still_reports_what_reached_its_chat_after_it_went_idle(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    """A short-lived process's ``send`` waits until every chat it runs is done; a message
    posted into the send's chat meanwhile is in its report, as a read at the end finds it."""
    await make_world("a1", "slow")
    script.by_agent["a1"] = lambda body: Reply.text(f"re: {body['messages'][-1]['content']}")
    script.by_agent["slow"] = lambda body: Reply.text("finally", delay=1.5)
    mine, other = (await aw.new_chat("w")).chat_id, (await aw.new_chat("w")).chat_id
    await aw.post("w", "@slow take your time", chat_id=other)  # runs in this process
    sending = asyncio.create_task(aw.send("w", "@a1 quick one", chat_id=mine, timeout=60))
    for _ in range(500):  # until the send's own chat is answered and let go
        if len(await aw.storage.transcript("w", mine)) == 2 and (await aw.runtime("w")).is_idle(mine):
            break
        await asyncio.sleep(0.01)
    assert not sending.done()  # still waiting for the slow chat

    await aw.post("w", "@a1 one more", chat_id=mine)
    result = await sending

    assert [m.content for m in result.messages] == [
        "@a1 quick one", "re: @a1 quick one", "@a1 one more", "re: @a1 one more"
    ]
    assert not result.timed_out and result.errors == []
