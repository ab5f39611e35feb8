"""`agentworld apply`, `export` and `init`: a world as a TOML file, in real subprocesses."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agentworld.world_file import render_world_file


def _team(cli: Any, tmp_path: Path, db: str | None = None) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rule]]\ntoolName = "shell_cmd"\ndecision = "deny"\npriority = 1\n')
    cli("world", "create", "team", "--description", "a team", "--turn-limit", "7",
        "--working-dir", str(tmp_path), "--policy", str(policy), "--tool-env", "LANG", db=db)
    cli("agent", "create", "team", "planner", "--provider", "scripted", "--model", "echo",
        "--system-prompt", 'Plan "well"\n\tthen hand over to @critic', db=db)
    cli("agent", "create", "team", "critic", "--provider", "openai", "--model", "gpt-4o",
        "--api-key-env", "TEAM_KEY", "--temperature", "0.5", "--max-tokens", "900", db=db)
    cli("world", "update", "team", "--main-agent", "planner", db=db)


def test_export_then_apply_to_an_empty_database_exports_the_same_bytes(
    cli: Any, tmp_path: Path, both_backends_url: str
) -> None:
    """Exported from SQLite or PostgreSQL, applied to an empty SQLite database."""
    _team(cli, tmp_path, db=both_backends_url)
    first = tmp_path / "team.toml"
    assert cli("export", "team", "--out", str(first), db=both_backends_url).code == 0
    text = first.read_text()
    assert 'apiKeyEnv = "TEAM_KEY"' in text and "mainAgent = \"planner\"" in text
    other = f"sqlite:///{tmp_path / 'other.db'}"
    plan = cli("apply", str(first), "--json", db=other).json()
    assert plan["world"] == "team"
    assert [(c["action"], c["kind"], c["name"]) for c in plan["changes"]] == [
        ("create", "world", "team"), ("create", "agent", "planner"), ("create", "agent", "critic")]
    assert cli("export", "team", db=other).stdout == text
    again = cli("apply", str(first), db=other)
    assert again.stdout.strip() == "no changes"
    assert cli("apply", str(first), "--json", db=other).json()["changes"] == []


def test_a_changed_prompt_shows_in_dry_run_then_applies(cli: Any, tmp_path: Path) -> None:
    _team(cli, tmp_path)
    file = tmp_path / "team.toml"
    cli("export", "team", "--out", str(file))
    (tmp_path / "critic.md").write_text("Review every plan twice.\n")
    changed = file.read_text().replace('apiKeyEnv = "TEAM_KEY"', 'apiKeyEnv = "TEAM_KEY"\npromptFile = "critic.md"')
    changed = changed.replace("turnLimit = 7", "turnLimit = 9")
    file.write_text(changed)
    dry = cli("apply", str(file), "--dry-run", "--json").json()
    assert dry["changes"] == [
        {"action": "update", "kind": "world", "name": "team", "fields": ["turnLimit"]},
        {"action": "update", "kind": "agent", "name": "critic", "fields": ["systemPrompt"]},
    ]
    assert cli("agent", "show", "team", "critic", "--json").json()["systemPrompt"] == ""
    cli("apply", str(file))
    assert cli("agent", "show", "team", "critic", "--json").json()["systemPrompt"] == "Review every plan twice.\n"
    assert cli("world", "show", "team", "--json").json()["turnLimit"] == 9
    assert cli("apply", str(file)).stdout.strip() == "no changes"


def test_agents_not_in_the_file_are_deleted_only_with_prune(cli: Any, tmp_path: Path) -> None:
    _team(cli, tmp_path)
    file = tmp_path / "team.toml"
    cli("export", "team", "--out", str(file))
    cli("agent", "create", "team", "extra", "--provider", "scripted", "--model", "echo")
    kept = cli("apply", str(file))
    assert "kept agent extra" in kept.stdout and "--prune" in kept.stdout
    assert cli("apply", str(file), "--json").json()["kept"] == ["extra"]
    plan = cli("apply", str(file), "--prune", "--dry-run", "--json").json()
    assert plan["changes"] == [{"action": "delete", "kind": "agent", "name": "extra", "fields": []}]
    cli("apply", str(file), "--prune")
    names = [a["name"] for a in cli("agent", "list", "team", "--json").json()["agents"]]
    assert sorted(names) == ["critic", "planner"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[world]\nname = "w"\n\n[[agents]]\nname = "a"\nprovider = "scripted"\nmodel = "echo"\ntemprature = 1\n',
         ":8: agents[0].temprature: unknown key"),
        ('[world]\nname = "w"\nturnLimit = "many"\n', ":3: world.turnLimit:"),
        ('[world]\nname = "w"\ndescription = "unclosed\n', "line 3"),
        ('[world]\nname = "w"\nturnLimit = 3\nsandbox = "sometimes"\n', ":4: world.sandbox:"),
    ],
)
def test_a_bad_file_is_refused_naming_file_line_and_key(cli: Any, tmp_path: Path, text: str, expected: str) -> None:
    file = tmp_path / "bad.toml"
    file.write_text(text)
    result = cli("apply", str(file), check=False)
    assert result.code == 1
    assert str(file) in result.stderr and expected in result.stderr
    assert cli("world", "list", "--json").json()["worlds"] == []


def test_a_secret_in_the_file_is_refused(cli: Any, tmp_path: Path) -> None:
    file = tmp_path / "leak.toml"
    file.write_text(
        '[world]\nname = "w"\n\n[[agents]]\nname = "a"\nprovider = "openai"\nmodel = "gpt-4o"\n'
        'systemPrompt = "use sk-proj-4f9aQ7xLmN2pR8sT1vW3yZ6bC0dE5gH7jK9"\n'
    )
    result = cli("apply", str(file), check=False)
    assert result.code == 1
    assert f"{file}:8: agents[0].systemPrompt" in result.stderr and "secret" in result.stderr
    assert "sk-proj" not in result.stderr
    assert cli("world", "list", "--json").json()["worlds"] == []


def test_the_writer_gives_what_tomllib_reads() -> None:
    world = {"name": "w", "description": 'quote " back \\ tab \t bell \x07 del \x7f é ✓', "turn_limit": 3,
             "approval_timeout": 12.5, "streaming": False, "tool_env": ["A", "B"],
             "client_tools": [{"name": "pick", "parameters": {"type": "object", "properties": {}}}],
             "mcp_config": {"mcpServers": {"my server": {"command": "x", "args": ["-v"], "env": {"K": "V"}}}}}
    agents = [{"name": "a", "provider": "scripted", "model": "echo", "system_prompt": "line\r\nnext"}]
    data = tomllib.loads(render_world_file(world, agents))
    assert data["world"]["description"] == world["description"]
    assert data["world"]["approvalTimeout"] == 12.5 and data["world"]["streaming"] is False
    assert data["world"]["clientTools"] == world["client_tools"]
    assert data["mcp"]["servers"] == world["mcp_config"]["mcpServers"]
    assert data["agents"][0]["systemPrompt"] == "line\r\nnext"


def test_a_prompt_of_several_lines_is_written_as_a_multi_line_string() -> None:
    prompt = 'Plan the release.\nHand it to @critic with """ quotes """ and a \\ backslash.\n'
    agents = [{"name": "a", "provider": "scripted", "model": "echo", "system_prompt": prompt}]
    short = {"name": "b", "provider": "scripted", "model": "echo"}
    text = render_world_file({"name": "w"}, [*agents, short])
    assert 'systemPrompt = """\nPlan the release.\n' in text
    assert text.startswith("[world]\n") and '[[agents]]\nname = "b"\n' in text  # a short agent is a table too
    assert tomllib.loads(text)["agents"][0]["systemPrompt"] == prompt
    crlf = [{**agents[0], "system_prompt": "one\r\ntwo\n"}, agents[0]]
    written = render_world_file({"name": "w"}, crlf)
    assert [a["systemPrompt"] for a in tomllib.loads(written)["agents"]] == ["one\r\ntwo\n", prompt]


def test_init_release_team_hands_work_over_and_waits_for_an_approval(cli: Any, tmp_path: Path) -> None:
    listed = cli("init", "--list").stdout
    assert "release-team" in listed
    cli("init", "release-team", "--dir", str(tmp_path))
    file = tmp_path / "release-team.toml"
    again = cli("init", "release-team", "--dir", str(tmp_path), check=False)
    assert again.code == 1 and "never overwrites" in again.stderr
    cli("apply", str(file))
    force = cli("policy", "test", "release-team", "--tool", "shell_cmd", "--args", '{"command": "git push --force"}', "--json")
    assert force.json()["decision"] == "DENY" and force.json()["rule"]["source"] == "policyRules"
    sent = cli("send", "release-team", "@planner plan the 1.2 release", timeout=120)
    assert "planner:" in sent.stdout and "\n@critic please review" in sent.stdout
    assert "critic:" in sent.stdout and "\n@ops please tag" in sent.stdout
    assert "approval requested" in sent.stdout
    pending = cli("approvals", "release-team", "--json").json()
    approval = pending["approvals"][0]
    assert approval["agent"] == "ops"
    assert not (tmp_path / "RELEASED").exists()
    cli("approve", "release-team", approval["approvalId"], "--decision", "approve", timeout=120)
    assert (tmp_path / "RELEASED").read_text() == "tagged v1.2\n"
    assert "Done: the release is tagged" in cli("messages", "release-team").stdout


def test_init_code_review_shows_each_file_change_as_a_diff_before_it_is_made(cli: Any, tmp_path: Path) -> None:
    listed = cli("init", "--list").stdout.splitlines()
    assert [line.split("\t")[0] for line in listed] == ["code-review", "release-team"]
    cli("init", "code-review", "--dir", str(tmp_path))
    cli("apply", str(tmp_path / "code-review.toml"))
    cli("send", "code-review", "@writer add a changelog", timeout=120)
    written = cli("approvals", "code-review", "--json").json()["approvals"][0]
    assert written["toolName"] == "write_file" and "+- Faster startup for teh command line." in written["diff"]
    cli("approve", "code-review", written["approvalId"], "--decision", "approve", timeout=120)
    edit = cli("approvals", "code-review", "--json").json()["approvals"][0]
    assert edit["agent"] == "reviewer" and edit["toolName"] == "edit_file"
    assert "-- Faster startup for teh command line.\n+- Faster startup for the command line." in edit["diff"]
    cli("approve", "code-review", edit["approvalId"], "--decision", "approve", timeout=120)
    assert "the command line" in (tmp_path / "CHANGELOG.md").read_text()


def test_mcp_servers_and_client_tools_survive_export_and_apply(cli: Any, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"notes": {"command": sys.executable, "args": ["-m", "notes"],
                                                             "env": {"NOTES_DIR": "/srv/notes"}}}}))
    tools = tmp_path / "client.json"
    tools.write_text(json.dumps([{"name": "pick_colour", "description": "Ask the page for a colour",
                                  "parameters": {"type": "object", "properties": {"hint": {"type": "string"}}}}]))
    cli("world", "create", "lab", "--working-dir", str(tmp_path), "--mcp-config", str(config),
        "--client-tools", str(tools), "--sandbox", "off", "--network", "allow")
    text = cli("export", "lab").stdout
    assert "[mcp.servers.notes]" in text and 'sandbox = "off"' in text
    file = tmp_path / "lab.toml"
    file.write_text(text)
    other = f"sqlite:///{tmp_path / 'other.db'}"
    cli("apply", str(file), db=other)
    assert cli("export", "lab", db=other).stdout == text
    shown = cli("world", "show", "lab", "--json", db=other).json()
    assert shown["mcpConfig"] == json.loads(config.read_text())
    assert shown["clientTools"] == json.loads(tools.read_text())
    assert cli("apply", str(file), db=other).stdout.strip() == "no changes"
