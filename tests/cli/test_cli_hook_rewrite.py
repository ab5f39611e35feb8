"""A hook's rewrite through the CLI (SPEC E2/E3): the transcript keeps what was said, the agent
answers the rewrite, and `agentworld audit` shows both. Before, the rewrite overwrote the stored
message, so nobody could tell what had been said."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)

HOOK = '''
def mask(event, respond):
    if event.kind == "message" and event.message.sender == "human":
        text = event.message.content.replace("4111 1111 1111 1111", "[card]")
        return event.model_copy(update={"message": event.message.model_copy(update={"content": text})})
    return None
'''


@pytest.fixture
def hook_importable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The hook's module, importable by every process of the test (set before ``db_url``
    starts a worker on Temporal, which is where the hook runs there)."""
    (tmp_path / "masking.py").write_text(HOOK)
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    return {"PYTHONPATH": path}


def test_audit_shows_what_was_said_and_what_the_agent_was_given(
    hook_importable: dict[str, str], cli: Any, tmp_path: Path
) -> None:
    env = hook_importable
    script = tmp_path / "a.json"
    script.write_text(json.dumps(["noted"]))
    cli("world", "create", "w", "--no-streaming", "--hook", "masking:mask", env=env)
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", f"file:{script}", env=env)

    sent = json.loads(cli("--json", "send", "w", "@a pay with 4111 1111 1111 1111", env=env).stdout)
    said = sent["messages"][0]
    assert said["content"] == "@a pay with 4111 1111 1111 1111"  # the transcript: what was said
    assert sent["messages"][-1]["content"] == "noted"

    memory = json.loads(cli("--json", "messages", "w", "--agent", "a", env=env).stdout)
    assert [m["content"] for m in memory["messages"]][0] == "@a pay with [card]"

    audit = json.loads(cli("--json", "audit", "w", env=env).stdout)["audit"]
    (entry,) = [e for e in audit if e["event"] == "rewrite"]
    assert entry["actor"] == "mask" and entry["chatId"] == sent["chatId"]
    assert entry["detail"]["messageId"] == said["messageId"]
    assert entry["detail"]["processed"] == "@a pay with [card]"
    assert entry["at"].endswith("Z")

    table = cli("audit", "w", env=env).stdout
    assert "rewrite" in table and f"message {said['messageId']}" in table
