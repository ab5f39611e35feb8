"""A session approval of ``read_file .env`` covers ``.env`` again, never ``.ssh/id_rsa``.

Black-box: the shipped defaults ask before secret files are read; answering ``read_file .env``
with scope session made a grant for ``read_file`` as a whole, so the agent's next
``read_file .ssh/id_rsa`` ran unasked and the key went to the model. A real run: real files in
a temp dir, a scripted model on a loopback server, approvals answered in-process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

ENV = "SECRET=envenvenv1\n"
KEY = "KEYDATA=idrsaidrsa2\n"


def _reads(path: str, call_id: str) -> Callable[[dict[str, Any]], Reply]:
    def reply(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("done")
        arguments = json.dumps({"path": path})
        return Reply.tools(ToolCallSpec(name="read_file", arguments=arguments, id=call_id))

    return reply


async def test_a_session_grant_for_dot_env_covers_only_dot_env(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    (work / ".ssh").mkdir(parents=True)
    (work / ".env").write_text(ENV)
    (work / ".ssh" / "id_rsa").write_text(KEY)
    await make_world("a1", working_dir=str(work))

    script.by_agent["a1"] = _reads(".env", "call_env")
    (asked,) = (await aw.send("w", "@a1 read .env", timeout=30)).pending_approvals
    chat = asked.chat_id
    await aw.approve("w", asked.tool_call_id, decision="approve", scope="session", timeout=30)
    assert "envenvenv1" in json.dumps(server.requests)

    script.by_agent["a1"] = _reads(".ssh/id_rsa", "call_key")
    again = await aw.send("w", "@a1 read the key", chat_id=chat, timeout=30)
    (waiting,) = again.pending_approvals
    assert (waiting.tool_name, waiting.tool_args) == ("read_file", {"path": ".ssh/id_rsa"})
    assert "idrsaidrsa2" not in json.dumps(server.requests)

    await aw.approve("w", waiting.tool_call_id, decision="deny", timeout=30)
    script.by_agent["a1"] = _reads("./.env", "call_env_again")
    third = await aw.send("w", "@a1 read .env again", chat_id=chat, timeout=30)
    assert third.pending_approvals == []
    (result,) = [m for m in third.messages if m.tool_call_id == "call_env_again"]
    assert "envenvenv1" in (result.content or "")
    assert "idrsaidrsa2" not in json.dumps(server.requests)


async def test_a_session_grant_through_a_symlink_covers_that_link_until_it_is_retargeted(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    """``notes.txt -> .env`` is asked about like ``.env``; approving it for the session covers
    the next read of ``notes.txt`` (before, the grant named only ``notes.txt`` while the call is
    judged by ``.env`` too, so the person was asked again each time), and not once the link
    leads elsewhere."""
    work = tmp_path / "work"
    (work / ".ssh").mkdir(parents=True)
    (work / ".env").write_text(ENV)
    (work / ".ssh" / "id_rsa").write_text(KEY)
    (work / "notes.txt").symlink_to(".env")
    await make_world("a1", working_dir=str(work))

    script.by_agent["a1"] = _reads("notes.txt", "call_notes")
    (asked,) = (await aw.send("w", "@a1 read the notes", timeout=30)).pending_approvals
    chat = asked.chat_id
    await aw.approve("w", asked.tool_call_id, decision="approve", scope="session", timeout=30)

    script.by_agent["a1"] = _reads("notes.txt", "call_notes_again")
    again = await aw.send("w", "@a1 read the notes again", chat_id=chat, timeout=30)
    assert again.pending_approvals == []
    (result,) = [m for m in again.messages if m.tool_call_id == "call_notes_again"]
    assert "envenvenv1" in (result.content or "")

    (work / "notes.txt").unlink()
    (work / "notes.txt").symlink_to(".ssh/id_rsa")
    script.by_agent["a1"] = _reads("notes.txt", "call_notes_key")
    third = await aw.send("w", "@a1 and once more", chat_id=chat, timeout=30)
    (waiting,) = third.pending_approvals
    assert (waiting.tool_name, waiting.tool_args) == ("read_file", {"path": "notes.txt"})
    assert "idrsaidrsa2" not in json.dumps(server.requests)
