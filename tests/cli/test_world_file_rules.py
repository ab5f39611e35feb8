"""A world file's own policy rules (``[[rules]]``): applied, decided on, listed, exported, planned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

RULES = """
[[rules]]
name = "notes may be written"
toolName = "write_file"
pathPrefix = "notes"
decision = "allow"
priority = 500

[[rules]]
name = "no rm"
toolName = "shell_cmd"
commandPrefix = "rm"
decision = "deny"
priority = 900
denyMessage = "rm is not for agents here"

[[rules]]
toolName = "list_files"
decision = "ask_user"
priority = 100
"""


def _world_file(tmp_path: Path, rules: str = RULES) -> Path:
    (tmp_path / "bot.json").write_text(json.dumps([
        {"content": "Working.", "tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes/today.md", "content": "hello\n"}},
            {"name": "shell_cmd", "arguments": {"command": "rm -rf notes"}},
            {"name": "list_files", "arguments": {"path": "."}},
        ]},
        "@human done",
    ]))
    file = tmp_path / "guarded.toml"
    file.write_text(
        '[world]\nname = "guarded"\nworkingDir = "."\n\n'
        '[[agents]]\nname = "bot"\nprovider = "scripted"\nmodel = "file:bot.json"\n' + rules
    )
    return file


def _decide(cli: Any, tool: str, args: dict[str, Any], **env: str) -> dict[str, Any]:
    result: dict[str, Any] = cli("policy", "test", "guarded", "--tool", tool, "--args", json.dumps(args), "--json", env=env).json()
    return result


def test_the_files_rules_decide_policy_test_and_show_in_policy_list(cli: Any, tmp_path: Path) -> None:
    cli("apply", str(_world_file(tmp_path)))
    denied = _decide(cli, "shell_cmd", {"command": "rm -rf notes"})
    assert denied["decision"] == "DENY" and denied["reason"] == "rm is not for agents here"
    assert (denied["rule"]["source"], denied["rule"]["number"], denied["rule"]["priority"]) == ("policyRules", 2, 2.9)
    allowed = _decide(cli, "write_file", {"path": "notes/a.md", "content": "x"})
    assert allowed["decision"] == "ALLOW" and allowed["rule"]["name"] == "notes may be written"
    assert _decide(cli, "write_file", {"path": "src/a.py", "content": "x"})["decision"] == "ASK_USER"
    asked = _decide(cli, "list_files", {"path": "."})
    assert asked["decision"] == "ASK_USER" and asked["rule"]["source"] == "policyRules"
    listed = cli("policy", "list", "guarded", "--json").json()["rules"]
    own = [(r["number"], r["decision"], r["toolName"]) for r in listed if r["source"] == "policyRules"]
    assert own == [(2, "DENY", "shell_cmd"), (1, "ALLOW", "write_file"), (3, "ASK_USER", "list_files")]
    text = cli("policy", "list", "guarded").stdout
    assert "policyRules #2" in text and "no rm" in text


def test_a_turn_is_decided_by_the_files_rules(cli: Any, tmp_path: Path) -> None:
    cli("apply", str(_world_file(tmp_path)))
    sent = cli("send", "guarded", "@bot tidy up", timeout=120)
    assert "approval requested" in sent.stdout
    assert (tmp_path / "notes" / "today.md").read_text() == "hello\n"  # allowed, not asked
    pending = cli("approvals", "guarded", "--json").json()["approvals"]
    assert [a["toolName"] for a in pending] == ["list_files"]  # asked by the file's rule
    memory = json.dumps(cli("messages", "guarded", "--agent", "bot", "--json").json())
    assert "rm is not for agents here" in memory  # denied: the model reads why


def test_an_admin_file_still_wins_over_the_worlds_own_rules(cli: Any, tmp_path: Path) -> None:
    admin = tmp_path / "admin.toml"
    admin.write_text('[[rule]]\ntoolName = "write_file"\ndecision = "deny"\npriority = 0\n')
    top = RULES.replace("priority = 500", "priority = 999")
    cli("apply", str(_world_file(tmp_path, top)))
    verdict = _decide(cli, "write_file", {"path": "notes/a.md", "content": "x"}, AGENTWORLD_ADMIN_POLICY=str(admin))
    assert verdict["decision"] == "DENY" and verdict["rule"]["source"] == str(admin)


def test_export_writes_the_rules_and_applying_it_again_changes_nothing(cli: Any, tmp_path: Path) -> None:
    cli("apply", str(_world_file(tmp_path)))
    exported = cli("export", "guarded").stdout
    assert exported.count("[[rules]]") == 3 and 'commandPrefix = "rm"' in exported
    again = tmp_path / "again.toml"
    again.write_text(exported)
    assert cli("apply", str(again)).stdout.strip() == "no changes"
    other = f"sqlite:///{tmp_path / 'other.db'}"
    cli("apply", str(again), db=other)
    assert cli("export", "guarded", db=other).stdout == exported
    assert cli("world", "show", "guarded", "--json", db=other).json()["policyRules"][1]["name"] == "no rm"


def test_the_plan_shows_each_rule_and_removes_one_only_with_prune(cli: Any, tmp_path: Path) -> None:
    file = _world_file(tmp_path)
    cli("apply", str(file))
    changed = RULES.replace("priority = 900", "priority = 950").split("[[rules]]\ntoolName = \"list_files\"")[0]
    changed += '[[rules]]\ntoolName = "read_file"\ndecision = "deny"\npriority = 1\n'
    _world_file(tmp_path, changed)
    plan = cli("apply", str(file), "--dry-run", "--json").json()
    assert plan["changes"] == [
        {"action": "update", "kind": "rule", "name": "no rm", "fields": ["priority"]},
        {"action": "create", "kind": "rule", "name": "#3 deny read_file", "fields": ["decision", "priority", "toolName"]},
    ]
    assert plan["keptRules"] == ["#3 ask_user list_files"]
    shown = cli("apply", str(file)).stdout
    assert "update rule no rm (priority)" in shown and "kept rule #3 ask_user list_files" in shown
    assert _decide(cli, "list_files", {"path": "."})["decision"] == "ASK_USER"  # kept
    pruned = cli("apply", str(file), "--prune", "--json").json()
    assert pruned["changes"] == [{"action": "delete", "kind": "rule", "name": "#4 ask_user list_files", "fields": []}]
    assert cli("apply", str(file)).stdout.strip() == "no changes"
    assert [r.get("toolName") for r in cli("world", "show", "guarded", "--json").json()["policyRules"]] == [
        "write_file", "shell_cmd", "read_file"]


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ('toolName = "shell_cmd"\ndecision = "maybe"\npriority = 1\n', ":11: rules[1].decision:"),
        ('toolName = "read_file"\nargsPatern = "x"\ndecision = "deny"\npriority = 1\n', ":11: rules[1].argsPatern: Extra inputs"),
        ('toolName = "read_file"\nargsPattern = "(a+)+"\ndecision = "deny"\npriority = 1\n', ":11: rules[1].argsPattern: pattern"),
        ('toolName = "read_file"\ncommandPrefix = "git"\ndecision = "deny"\npriority = 1\n', ":10: rules[1].toolName: commandPrefix"),
        ('name = "x"\ntoolName = "read_file"\ndecision = "deny"\npriority = 1\n\n[[rules]]\nname = "X"\ndecision = "deny"\npriority = 2\n',
         ":16: rules[2].name: another rule has this name"),
    ],
)
def test_a_bad_rule_is_refused_naming_its_line_and_key(cli: Any, tmp_path: Path, rule: str, expected: str) -> None:
    file = tmp_path / "bad.toml"
    file.write_text('[world]\nname = "w"\n\n[[rules]]\ntoolName = "shell_cmd"\ndecision = "deny"\npriority = 1\n\n[[rules]]\n' + rule)
    result = cli("apply", str(file), check=False)
    assert result.code == 1
    assert f"{file}{expected}" in result.stderr, result.stderr
    assert cli("world", "list", "--json").json()["worlds"] == []


def test_at_equal_priority_the_worlds_own_rule_wins_over_its_policy_file(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "shared.toml").write_text('[[rule]]\ntoolName = "list_files"\ndecision = "allow"\npriority = 100\n')
    file = _world_file(tmp_path)
    file.write_text(file.read_text().replace('workingDir = "."\n', 'workingDir = "."\npolicyFiles = ["shared.toml"]\n'))
    cli("apply", str(file))
    verdict = _decide(cli, "list_files", {"path": "."})
    assert verdict["decision"] == "ASK_USER" and verdict["rule"]["source"] == "policyRules"
    listed = [r["source"] for r in cli("policy", "list", "guarded", "--json").json()["rules"] if r["toolName"] == "list_files"]
    assert listed.index("policyRules") < listed.index(str(tmp_path / "shared.toml"))
