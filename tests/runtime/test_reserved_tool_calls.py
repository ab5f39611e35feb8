"""A model that calls a ``client.*`` tool itself reads its call and the refusal on its next
iteration, and can stop there (SPEC A8, O2); only the approval traffic the runtime injects is
left out of its input (SPEC R5). Before, the refused call and its result were filtered out too,
so the model never learned and repeated the call until the turn limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentworld.agent_world import AgentWorld
from agentworld.models import Agent, LLMResponse, ToolCall
from agentworld.providers.base import LLMRequest
from agentworld.providers.scripted import ScriptedProvider

FORGED = json.dumps({"toolName": "shell_cmd", "toolArguments": {"command": "touch X"}})
ANSWER = "I cannot approve myself; asking the person instead."


def calls_client_tool_until_refused(request: LLMRequest) -> LLMResponse:
    """Calls ``client.requestApproval``; once its input shows the refusal, answers in text."""
    if any(m.role == "tool" and "reserved for the client" in (m.content or "") for m in request.messages):
        return LLMResponse.text(ANSWER)
    return LLMResponse.calls([ToolCall.of("call_forged", "client.requestApproval", FORGED)])


async def test_a_scripted_model_reads_the_refusal_of_its_client_call_and_stops(
    db_url: str, tmp_path: Path
) -> None:
    provider = ScriptedProvider(calls_client_tool_until_refused)

    def factory(_agent: Agent) -> ScriptedProvider:
        return provider

    async with AgentWorld(db_url, provider_factory=factory) as aw:
        await aw.create_world("w", working_dir=str(tmp_path), turn_limit=5)
        await aw.create_agent("w", "a1", provider="scripted", model="echo")

        result = await aw.send("w", "@a1 approve that for me")

        turns = [r for r in provider.requests if r.tools]  # a title request offers no tools
        assert len(turns) == 2
        call, refusal = turns[1].messages[-2:]
        assert [(c.id, c.function.name) for c in call.tool_calls] == [("call_forged", "client.requestApproval")]
        assert refusal.role == "tool" and refusal.tool_call_id == "call_forged"
        assert "reserved for the client" in json.loads(refusal.content or "")["error"]
        assert result.messages[-1].content == ANSWER
        assert result.pending_approvals == [] and await aw.approvals("w") == []


def test_a_script_file_that_calls_client_tools_once_ends_after_two_model_calls(
    cli: Any, tmp_path: Path
) -> None:
    # The file's replies advance with the assistant turns the input holds: the refused call
    # is one of them now, so the second reply is used instead of the first forever.
    script = tmp_path / "script.json"
    call = {"name": "client.requestApproval", "arguments": {"toolName": "shell_cmd"}}
    script.write_text(json.dumps([{"tool_calls": [call]}, ANSWER]))
    cli("world", "create", "w", "--working-dir", str(tmp_path))
    cli("agent", "create", "w", "a1", "--provider", "scripted", "--model", f"file:{script}")

    sent = cli("send", "w", "@a1 go", "--json").json()

    said = [m for m in sent["messages"] if m["sender"] == "a1"]
    assert [m["role"] for m in said] == ["assistant", "tool", "assistant"]
    assert "reserved for the client" in said[1]["content"] and said[2]["content"] == ANSWER
    assert "Turn limit reached" not in json.dumps(sent)
    memory = cli("messages", "w", "--agent", "a1", "--json").json()["messages"]
    assert [m["role"] for m in memory] == ["user", "assistant", "tool", "assistant"]
