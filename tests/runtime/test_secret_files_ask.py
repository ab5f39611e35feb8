"""The shipped defaults ask before a tool reads a file that usually holds credentials.

``read_file`` and ``list_files`` are allowed by default (SPEC T2), and before this rule
``read_file .env`` ran without anyone being asked, handing its keys to the model. The rule
is checked through the real engine over ``defaults.toml``, through ``check_tool_call`` (what
``agentworld policy test WORLD`` prints) and through a real run that must wait for a person.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import builtin_rules
from agentworld.policy.rules import PolicyDecision
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

ASK, ALLOW = PolicyDecision.ASK_USER, PolicyDecision.ALLOW
SECRET_FILES = [
    ".env", "./.env", "app/.env", ".env.local", "config/.env.production", "prod.env", ".ENV",
    ".envrc", ".ssh/id_rsa", "home/.ssh/config", ".aws/credentials", ".gnupg/pubring.kbx",
    ".netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass", "keys/id_ed25519",
    "id_ecdsa", "tls/server.pem", "server.key", "credentials.json", "gcloud/credentials.db",
    "/proc/self/environ", "/proc/1/environ", "proc/self/environ", "../../proc/1/mem",
    ".docker/config.json", ".kube/config",
]  # fmt: skip
ORDINARY_FILES = [
    "README.md", "src/app.py", "keyboard.py", "monkey.txt", "environment.yml", "docs/.envelope",
    "notes/.env-sample", "src/proc/main.c", "tokens.md", "keys.py",
]  # fmt: skip
ENV_FILE = "OPENAI_API_KEY=sk-live-0123456789abcdef\nDB_PASSWORD=hunter2hunter2\n"


@pytest.fixture(scope="module")
def defaults() -> PolicyEngine:
    return PolicyEngine(builtin_rules())


@pytest.mark.parametrize("path", SECRET_FILES)
def test_reading_a_secret_looking_file_asks(defaults: PolicyEngine, path: str) -> None:
    result = defaults.evaluate("read_file", {"path": path})
    assert result.decision is ASK
    assert result.rule is not None and result.rule.name == "files that hold secrets need a person"


@pytest.mark.parametrize("path", ORDINARY_FILES)
def test_reading_an_ordinary_file_is_still_allowed(defaults: PolicyEngine, path: str) -> None:
    assert defaults.evaluate("read_file", {"path": path}).decision is ALLOW


def test_listing_a_directory_is_still_allowed(defaults: PolicyEngine) -> None:
    assert defaults.evaluate("list_files", {"path": ".ssh"}).decision is ALLOW


def test_yolo_mode_still_allows_reading_them() -> None:
    """yolo allows everything but DENY rules: the ask rule stays below it."""
    assert PolicyEngine(builtin_rules(), mode="yolo").evaluate("read_file", {"path": ".env"}).decision is ALLOW


@pytest.mark.parametrize(
    "command",
    ["grep -a -o 'sk-[A-Za-z0-9]*' /proc/*/environ | base64 -w0", "cat /proc/self/environ", "cat proc/1/environ"],
)
def test_a_shell_line_naming_proc_is_asked_about_with_the_reason(defaults: PolicyEngine, command: str) -> None:
    result = defaults.evaluate("shell_cmd", {"command": command})
    assert result.decision is ASK
    assert result.rule is not None and "/proc" in (result.rule.name or "")


async def test_the_runtime_asks_before_reading_dot_env(
    aw: AgentWorld, make_world: Any, script: Any, server: OpenAIWireServer, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text(ENV_FILE)
    await make_world("a1", working_dir=str(tmp_path))
    verdict = await aw.check_tool_call("w", "read_file", {"path": ".env"})
    assert verdict.decision is ASK
    assert (await aw.check_tool_call("w", "read_file", {"path": "notes.txt"})).decision is ALLOW

    def read_env(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("done")
        return Reply.tools(ToolCallSpec(name="read_file", arguments='{"path": ".env"}'))

    script.by_agent["a1"] = read_env
    sent = await aw.send("w", "@a1 read .env", timeout=30)

    (waiting,) = await aw.approvals("w")
    assert (waiting.tool_name, waiting.tool_args) == ("read_file", {"path": ".env"})
    assert not any("hunter2hunter2" in (m.content or "") for m in sent.messages)
    assert all("hunter2hunter2" not in str(request) for request in server.requests)
