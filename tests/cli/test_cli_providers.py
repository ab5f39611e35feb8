"""The same conversation through every provider family, each on its own loopback wire server,
driven through the CLI (issue: LLM providers, acceptance 1–4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.anthropic_wire import AnthropicWireServer
from agentworld.testing.gemini_wire import GeminiWireServer
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)

SERVERS: dict[str, Any] = {
    "openai": OpenAIWireServer,
    "anthropic": AnthropicWireServer,
    "google": GeminiWireServer,
}


def _flatten(body: dict[str, Any]) -> str:
    return json.dumps(body)


@pytest.fixture(params=sorted(SERVERS))
def provider(request: pytest.FixtureRequest) -> Any:
    name = request.param
    with SERVERS[name]() as server:
        yield name, server


def _world(cli: Any, name: str, server: Any, tmp_path: Path) -> None:
    cli("world", "create", "w1", "--working-dir", str(tmp_path))
    cli(
        "agent", "create", "w1", "a1", "--provider", name, "--model", "wire-model",
        "--base-url", server.base_url, "--system-prompt", "You are the a1 test agent.",
    )


def test_the_same_conversation_has_the_same_shape_on_every_provider(
    cli: Any, provider: tuple[str, Any], tmp_path: Path
) -> None:
    name, server = provider
    (tmp_path / "notes.txt").write_text("the launch is on Friday")
    _world(cli, name, server, tmp_path)
    server.enqueue(
        Reply.text("Hello, I am a1."),
        Reply.text("Greeting title"),
        Reply.tools(ToolCallSpec(name="read_file", arguments='{"path": "notes.txt"}')),
        Reply.text("The notes say the launch is on Friday."),
    )

    first = cli("send", "w1", "@a1 hello", "--json").json()
    second = cli("send", "w1", "@a1 when is the launch?", "--json").json()

    transcript = cli("messages", "w1", "--json").json()["messages"]
    assert [m["role"] for m in transcript] == ["user", "assistant", "user", "assistant", "tool", "assistant"]
    assert first["messages"][-1]["content"] == "Hello, I am a1."
    call = transcript[3]["tool_calls"][0]
    assert call["function"]["name"] == "read_file"
    assert json.loads(call["function"]["arguments"]) == {"path": "notes.txt"}
    assert transcript[4]["tool_call_id"] == call["id"]
    assert "the launch is on Friday" in transcript[4]["content"]
    assert second["messages"][-1]["content"] == "The notes say the launch is on Friday."

    # What each provider received, in its own format: system prompt, history, the tool result.
    final_request = server.requests[-1]
    flat = _flatten(final_request)
    assert "You are the a1 test agent." in flat
    assert "Hello, I am a1." in flat and "@a1 hello" in flat
    assert "the launch is on Friday" in flat
    if name == "openai":
        assert final_request["messages"][0] == {"role": "system", "content": "You are the a1 test agent."}
        assert final_request["messages"][-1]["role"] == "tool"
    elif name == "anthropic":
        assert final_request["system"] == "You are the a1 test agent."
        last = final_request["messages"][-1]
        assert last["role"] == "user" and last["content"][0]["type"] == "tool_result"
        assert last["content"][0]["tool_use_id"] == call["id"]
    else:
        assert "You are the a1 test agent." in _flatten(final_request["systemInstruction"])
        last = final_request["contents"][-1]
        assert "functionResponse" in last["parts"][0]
        assert last["parts"][0]["functionResponse"]["name"] == "read_file"

    usage = cli("agent", "show", "w1", "a1", "--json").json()["usage"]
    assert usage["inputTokens"] > 0 and usage["outputTokens"] > 0


@pytest.fixture
def three_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three attempts per model call in every process of the test (set before ``db_url``
    starts a worker on Temporal, which is where the model is called there)."""
    monkeypatch.setenv("AGENTWORLD_LLM_RETRIES", "3")


def test_a_500_is_retried_then_reported_and_the_human_message_stays(
    three_attempts: None, cli: Any, provider: tuple[str, Any], tmp_path: Path
) -> None:
    name, server = provider
    _world(cli, name, server, tmp_path)
    server.enqueue(*[Reply.error(500, "upstream exploded")] * 3)

    result = cli("send", "w1", "@a1 are you there?", check=False, env={"AGENTWORLD_LLM_RETRIES": "3"})

    assert result.code == 1 and "500" in result.stderr and "upstream exploded" in result.stderr
    assert len(server.requests) == 3
    stored = cli("messages", "w1", "--json").json()["messages"]
    assert stored[0]["content"] == "@a1 are you there?"
    assert stored[-1]["role"] == "system"


def test_a_429_then_success_gives_a_normal_answer(three_attempts: None, cli: Any, provider: tuple[str, Any], tmp_path: Path) -> None:
    name, server = provider
    _world(cli, name, server, tmp_path)
    server.enqueue(Reply.error(429, "slow down", headers={"retry-after": "0"}), Reply.text("fine now"))

    sent = cli("send", "w1", "@a1 hi", "--json", env={"AGENTWORLD_LLM_RETRIES": "3"}).json()

    assert sent["messages"][-1]["content"] == "fine now"
    assert len([r for r in server.requests if "You are the a1 test agent." in _flatten(r)]) == 2


def test_two_parallel_tool_calls_both_run_and_both_results_go_back(
    cli: Any, provider: tuple[str, Any], tmp_path: Path
) -> None:
    name, server = provider
    (tmp_path / "a.txt").write_text("ALPHA")
    (tmp_path / "b.txt").write_text("BETA")
    _world(cli, name, server, tmp_path)
    server.enqueue(
        Reply.tools(
            ToolCallSpec(name="read_file", arguments='{"path": "a.txt"}'),
            ToolCallSpec(name="read_file", arguments='{"path": "b.txt"}'),
        ),
        Reply.text("both read"),
    )

    sent = cli("send", "w1", "@a1 read both", "--json").json()

    calls = [c for m in sent["messages"] if m["tool_calls"] for c in m["tool_calls"]]
    results = [m for m in sent["messages"] if m["role"] == "tool"]
    assert len(calls) == 2 and len({c["id"] for c in calls}) == 2
    assert [r["tool_call_id"] for r in results] == [c["id"] for c in calls]
    assert "ALPHA" in results[0]["content"] and "BETA" in results[1]["content"]
    flat = _flatten(server.requests[1])
    assert "ALPHA" in flat and "BETA" in flat
