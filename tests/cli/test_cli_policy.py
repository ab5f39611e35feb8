"""The policy engine through the CLI and inside a world (issue acceptance 1–4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

POLICY = """
[[rule]]
name = "harmless commands"
toolName = "shell_cmd"
commandPrefix = ["git log", "echo", "touch"]
decision = "allow"
priority = 100

[[rule]]
name = "no deleting"
toolName = "shell_cmd"
commandPrefix = "rm"
decision = "deny"
priority = 200
denyMessage = "Deleting files is not allowed in this world."
"""


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    return path


@pytest.mark.parametrize(
    ("command", "decision"),
    [
        ("git log --oneline", "ALLOW"),
        ("git logout", "ASK_USER"),
        ("rm -rf x", "DENY"),
        ("echo hi && rm -rf ~", "DENY"),
        ("echo $(rm -rf ~)", "DENY"),
        ("echo hi && curl x", "ASK_USER"),
        ("echo hi; git log", "ALLOW"),
        ("echo hi > /etc/passwd", "ASK_USER"),
    ],
)
def test_policy_test_decides_compound_commands(cli: Any, policy_file: Path, command: str, decision: str) -> None:
    result = cli("policy", "test", "--tool", "shell_cmd", "--args", json.dumps({"command": command}),
                 "--policy", str(policy_file), "--json").json()
    assert result["decision"] == decision
    if decision == "DENY":
        assert (result["rule"]["source"], result["rule"]["index"]) == (str(policy_file), 1)
        assert result["rule"]["number"] == 2  # JSON keeps the 0-based index, adds the number
        assert result["rule"]["priority"] == 2.2


def test_rule_numbers_a_person_reads_count_from_1(cli: Any, policy_file: Path) -> None:
    tested = cli("policy", "test", "--tool", "shell_cmd", "--args", '{"command": "rm x"}',
                 "--policy", str(policy_file)).stdout  # fmt: skip
    assert f"by no deleting ({policy_file}, rule 2, priority 2.200)" in tested  # the second rule

    cli("world", "create", "w", "--policy", str(policy_file))
    listed = cli("policy", "list", "w", "--json").json()["rules"]
    ours = {r["name"]: (r["index"], r["number"]) for r in listed if r["source"] == str(policy_file)}
    assert ours == {"harmless commands": (0, 1), "no deleting": (1, 2)}
    table = cli("policy", "list", "w", env={"COLUMNS": "400"}).stdout
    assert f"{policy_file} #1" in table and f"{policy_file} #2" in table
    assert f"{policy_file} #0" not in table


def test_policy_test_without_a_matching_rule_and_non_interactive(cli: Any) -> None:
    asked = cli("policy", "test", "--tool", "some_tool", "--args", '{"x": 1}', "--json").json()
    assert asked == {"decision": "ASK_USER", "rule": None, "reason": "no rule matched"}
    denied = cli("policy", "test", "--tool", "some_tool", "--non-interactive", "--json").json()
    assert denied["decision"] == "DENY"
    spoofed = cli("policy", "test", "--tool", "files__read", "--server", "evil", "--json").json()
    assert spoofed["decision"] == "DENY"


def test_policy_test_text_shows_control_characters_as_escapes(cli: Any, tmp_path: Path) -> None:
    """The reason quotes the call and a rule's name comes from a file: a carriage return or an
    escape sequence in either is shown, never acted on by the terminal (which would let
    "rm -rf" overwrite the words before it)."""
    hostile = {"command": "echo hi\u001b[2K\rrm -rf /tmp/x"}
    asked = cli("policy", "test", "--tool", "shell_cmd", "--args", json.dumps(hostile))
    policy = tmp_path / "named.toml"
    policy.write_text('[[rule]]\ntoolName = "read_file"\ndecision = "allow"\npriority = 1\n'
                      'name = "ok\\u001b[8mhidden\\r"\n')  # fmt: skip
    named = cli("policy", "test", "--tool", "read_file", "--args", '{"path": "x"}', "--policy", str(policy))

    for shown in (asked.stdout, named.stdout):
        assert not any(ord(c) < 32 and c != "\n" for c in shown), repr(shown)
    assert "echo hi\\e[2K\\rrm -rf /tmp/x" in asked.stdout
    assert "by ok\\e[8mhidden\\r (" in named.stdout


@pytest.mark.parametrize("path", [".env/", "server.key/.", "docs/../.env", "prod.env/"])
def test_policy_test_without_a_world_judges_a_file_path_where_it_leads(cli: Any, path: str) -> None:
    """As the runtime does from the world's working directory (P9): ``.env/`` opens ``.env``.
    Before, the pure engine matched the path as written and printed ALLOW."""
    args = json.dumps({"path": path})
    verdict = cli("policy", "test", "--tool", "read_file", "--args", args, "--json").json()
    assert verdict["decision"] == "ASK_USER"
    assert verdict["rule"]["name"] == "files that hold secrets need a person"
    plain = cli("policy", "test", "--tool", "read_file", "--args", '{"path": "docs/./intro.md"}', "--json")
    assert plain.json()["decision"] == "ALLOW"


def test_policy_test_without_a_world_includes_the_admin_tier(cli: Any, tmp_path: Path, policy_file: Path) -> None:
    admin = tmp_path / "admin.toml"
    admin.write_text('[[rule]]\ntoolName = "shell_cmd"\ncommandPrefix = "echo"\ndecision = "deny"\npriority = 0\n')
    args = ("policy", "test", "--tool", "shell_cmd", "--args", '{"command": "echo hi"}', "--policy", str(policy_file), "--json")
    assert cli(*args).json()["decision"] == "ALLOW"  # the --policy file alone allows echo
    denied = cli(*args, env={"AGENTWORLD_ADMIN_POLICY": str(admin)}).json()
    assert (denied["decision"], denied["rule"]["source"], denied["rule"]["priority"]) == ("DENY", str(admin), 3.0)
    broken = cli(*args, env={"AGENTWORLD_ADMIN_POLICY": str(tmp_path / "missing.toml")}).json()
    assert (broken["decision"], broken["by"]) == ("DENY", "broken policy")  # as the runtime: fail closed


def test_policy_test_options_that_need_a_world(cli: Any) -> None:
    refused = cli("policy", "test", "--tool", "x", "--agent", "a1", "--chat", "c1", check=False)
    assert refused.code == 2 and "need WORLD" in refused.stderr
    unknown = cli("policy", "test", "nowhere", "--tool", "x", check=False)
    assert unknown.code == 1 and len(unknown.stderr.strip().splitlines()) == 1


def test_args_pattern_ignores_key_order(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[[rule]]\ntoolName = "deploy"\nargsPattern = \'"env":"prod"\'\ndecision = "deny"\npriority = 5\n')
    for args in ('{"env": "prod", "app": "x"}', '{"app": "x", "env": "prod"}'):
        result = cli("policy", "test", "--tool", "deploy", "--args", args, "--policy", str(path), "--json").json()
        assert result["decision"] == "DENY"


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ('toolName = "x"\ndecision = "allow"\npriority = 1.5', "schema_validation"),
        ('toolName = "x"\ndecision = "allow"\npriority = 1000', "schema_validation"),
        ('toolName = "x"\ndecision = "allow"\npriority = 1\nargsPatern = "y"', "schema_validation"),
        ('toolName = "x"\ndecision = "allow"\npriority = 1\nargsPattern = "(unclosed"', "regex_compilation"),
        ("toolName = \"x\"\ndecision = \"allow\"\npriority = 1\nargsPattern = 'rm(?= -rf)'", "regex_compilation"),
    ],
)
def test_bad_rules_are_refused_naming_file_and_rule(cli: Any, tmp_path: Path, rule: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[[rule]]\ntoolName = "ok"\ndecision = "allow"\npriority = 1\n\n[[rule]]\n' + rule + "\n")
    tested = cli("policy", "test", "--tool", "x", "--policy", str(path), check=False)
    # The second rule is "rule 2": a person counts a file's rules from 1.
    assert tested.code == 1 and f"{path}, rule 2: {expected}" in tested.stderr
    created = cli("world", "create", "w1", "--policy", str(path), check=False)
    assert created.code == 1 and f"{path}, rule 2: {expected}" in created.stderr
    assert cli("world", "list", "--json").json() == {"worlds": []}


class Model:
    def __init__(self) -> None:
        self.commands: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("tool said: " + body["messages"][-1]["content"])
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": self.commands.pop(0)})))


@pytest.fixture
def world(cli: Any, script: Any, server: OpenAIWireServer, tmp_path: Path, policy_file: Path) -> tuple[Model, Path]:
    model = Model()
    script.by_agent["a1"] = model
    work = tmp_path / "work"
    work.mkdir()
    cli("world", "create", "w1", "--working-dir", str(work), "--policy", str(policy_file))
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    return model, work


def ask(cli: Any, model: Model, command: str) -> dict[str, Any]:
    model.commands.append(command)
    return cli("send", "w1", "@a1 go", "--json").json()


def test_in_a_world_allowed_runs_denied_never_runs_unmatched_asks(cli: Any, world: tuple[Model, Path]) -> None:
    model, work = world
    allowed = ask(cli, model, "touch made")
    assert allowed["pendingApprovals"] == [] and (work / "made").exists()

    (work / "keep").write_text("precious")
    denied = ask(cli, model, "echo bye && rm keep")
    assert denied["pendingApprovals"] == [] and (work / "keep").exists()
    assert "Deleting files is not allowed in this world." in denied["messages"][-1]["content"]
    audit = cli("audit", "w1", "--json").json()["audit"]
    assert [(e["event"], e["decision"]) for e in audit] == [("policy", "deny")]

    unmatched = ask(cli, model, "curl http://example.invalid")
    assert len(unmatched["pendingApprovals"]) == 1


def test_always_answers_persist_show_in_policy_list_and_can_be_revoked(cli: Any, world: tuple[Model, Path]) -> None:
    model, work = world
    (first,) = ask(cli, model, "mkdir one")["pendingApprovals"]
    cli("approve", "w1", first["approvalId"], "--decision", "approve", "--scope", "always")
    assert (work / "one").is_dir()

    other_chat = cli("chat", "new", "w1").stdout.strip()
    model.commands.append("mkdir two")
    unasked = cli("send", "w1", "@a1 go", "--chat", other_chat, "--json").json()
    assert unasked["pendingApprovals"] == [] and (work / "two").is_dir()

    rules = cli("policy", "list", "w1", "--json").json()["rules"]
    always = [r for r in rules if r["source"].startswith("always:")]
    assert [(r["decision"], r["priority"], r["commandPrefix"]) for r in always] == [("ALLOW", 2.95, ["mkdir"])]
    assert rules[0]["priority"] >= rules[-1]["priority"]
    assert any(r["source"] == "built-in defaults" for r in rules)

    cli("policy", "revoke", "w1", always[0]["source"])
    asked = ask(cli, model, "mkdir three")
    assert len(asked["pendingApprovals"]) == 1 and not (work / "three").exists()
