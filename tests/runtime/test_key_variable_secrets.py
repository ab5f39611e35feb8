"""The variable an agent reads its key from is a secret whatever its name.

Black-box: an agent made with ``--api-key-env LLMX`` (a name with no ``KEY`` or ``TOKEN`` in
it), a world passing ``LLMX`` to its tools, and ``echo $LLMX`` approved: the whole key came
back in the tool result, went to the model and was stored. Run here for real: the loopback
model, the real shell and file tools, the SQLite file read back.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

VALUE = "llmx-key-0123456789abcdefXYZ"
POLICY = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = "echo"
decision = "allow"
priority = 900
"""


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh variable name per test: a name once used as a key stays secret in the process."""
    name = f"LLMX_{uuid.uuid4().hex[:8].upper()}"
    monkeypatch.setenv(name, VALUE)
    return name


@pytest.fixture
async def work(aw: AgentWorld, server: OpenAIWireServer, tmp_path: Path, key_env: str) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text(f"the key is {VALUE}\n")
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    await aw.create_world(
        "w", working_dir=str(work), policy_files=[str(policy)], streaming=False, tool_env=[key_env]
    )
    await aw.create_agent(
        "w", "a1", provider="openai", model="m", base_url=server.base_url,
        system_prompt="agent:a1", api_key_env=key_env,
    )  # fmt: skip
    return work


def _calls_then_done(call: ToolCallSpec) -> Any:
    def respond(body: dict[str, Any]) -> Reply:
        return Reply.text("done") if body["messages"][-1]["role"] == "tool" else Reply.tools(call)

    return respond


def _tool_results(server: OpenAIWireServer) -> list[str]:
    return [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "tool"]


def _assert_not_kept(db: Path, server: OpenAIWireServer) -> None:
    assert VALUE not in json.dumps(server.requests)
    with closing(sqlite3.connect(db)) as conn:
        for table in ("messages", "tool_logs", "events"):
            rows = "\n".join(repr(row) for row in conn.execute(f"SELECT * FROM {table}"))
            assert VALUE not in rows, table


async def test_echoing_the_agents_key_variable_shows_a_mask(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, work: Path, tmp_path: Path, key_env: str
) -> None:
    call = ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": f"echo ${key_env}"}))
    script.by_agent["a1"] = _calls_then_done(call)

    await aw.send("w", "@a1 show it", timeout=30)

    (result,) = _tool_results(server)
    assert json.loads(result)["stdout"] == f"[REDACTED:{key_env}]\n"
    _assert_not_kept(tmp_path / "agentworld.db", server)


async def test_a_file_holding_the_agents_key_is_read_masked(
    aw: AgentWorld, script: Any, server: OpenAIWireServer, work: Path, tmp_path: Path, key_env: str
) -> None:
    script.by_agent["a1"] = _calls_then_done(ToolCallSpec(name="read_file", arguments='{"path": "notes.txt"}'))

    await aw.send("w", "@a1 read it", timeout=30)

    (result,) = _tool_results(server)
    assert json.loads(result)["content"] == f"the key is [REDACTED:{key_env}]\n"
    _assert_not_kept(tmp_path / "agentworld.db", server)
