"""World and agent settings are checked when they are set (issue 14): names and the main agent,
MCP servers, client tools, legacy tool lists, hooks; settings can be cleared; ``tools`` says
which MCP servers are unavailable. Through real ``agentworld`` processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

MCP_SERVER = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")


def assert_one_line_error(result: Any, message: str, *, code: int) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert message in lines[0], lines[0]
    assert result.code == code


def _world(cli: Any, *agents: str, name: str = "w") -> None:
    cli("world", "create", name)
    for agent in agents:
        cli("agent", "create", name, agent, "--provider", "scripted", "--model", "echo")


# -- names and the main agent -------------------------------------------------------------------


def test_main_agent_is_stored_with_the_agents_own_spelling(cli: Any) -> None:
    _world(cli, "Planner")
    shown = cli("world", "update", "w", "--main-agent", "planner", "--json").json()
    assert shown["mainAgent"] == "Planner"


def test_deleting_the_main_agent_clears_it_with_a_notice_on_stderr(cli: Any) -> None:
    _world(cli, "a1", "a2")
    cli("world", "update", "w", "--main-agent", "a1")

    deleted = cli("agent", "delete", "w", "A1", "--json")

    assert deleted.json() == {"deleted": "a1"}  # as it was created, not as typed (docs/cli.md)
    assert deleted.stderr.strip() == "note: a1 was the main agent of world w; it has no main agent now"
    assert cli("world", "show", "w", "--json").json()["mainAgent"] is None


def test_deleting_another_agent_keeps_the_main_agent_quietly(cli: Any) -> None:
    _world(cli, "a1", "a2")
    cli("world", "update", "w", "--main-agent", "a1")
    deleted = cli("agent", "delete", "w", "a2")
    assert deleted.stderr == ""
    assert cli("world", "show", "w", "--json").json()["mainAgent"] == "a1"


def test_an_empty_main_agent_clears_it(cli: Any) -> None:
    _world(cli, "a1")
    cli("world", "update", "w", "--main-agent", "a1")
    assert cli("world", "update", "w", "--main-agent", "", "--json").json()["mainAgent"] is None


def test_world_names_are_unique_regardless_of_case_but_keep_their_spelling(cli: Any) -> None:
    cli("world", "create", "Team")
    refused = cli("world", "create", "team", check=False)
    assert_one_line_error(refused, "world 'Team' already exists (names are unique regardless of case)", code=1)
    assert [w["name"] for w in cli("world", "list", "--json").json()["worlds"]] == ["Team"]


# -- MCP servers, client tools, legacy lists ---------------------------------------------------


def test_an_mcp_server_whose_command_is_missing_is_refused_at_create_and_update(
    cli: Any, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"gone": {"command": "no-such-program-xyz"}}}))
    local = tmp_path / "local.json"
    local.write_text(json.dumps({"mcpServers": {"here": {"command": str(tmp_path / "nothing")}}}))

    created = cli("world", "create", "w", "--mcp-config", str(config), check=False)
    assert_one_line_error(created, "MCP server 'gone': command 'no-such-program-xyz' was not found on PATH", code=1)
    cli("world", "create", "w")
    updated = cli("world", "update", "w", "--mcp-config", str(local), check=False)
    assert_one_line_error(updated, f"MCP server 'here': command '{tmp_path / 'nothing'}' does not exist", code=1)
    assert cli("world", "show", "w", "--json").json()["mcpConfig"] is None


def test_tools_names_the_mcp_servers_that_are_unavailable(cli: Any, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "calc": {"command": sys.executable, "args": [MCP_SERVER]},
        "broken": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]},
    }}))
    cli("world", "create", "w", "--mcp-config", str(config))

    listed = cli("tools", "w", "--json")

    document = listed.json()
    names = {tool["name"] for tool in document["tools"]}
    assert "calc__add" in names and not any(n.startswith("broken__") for n in names)
    assert [s["name"] for s in document["unavailableServers"]] == ["broken"]
    assert "broken" in document["unavailableServers"][0]["reason"]
    assert listed.stderr.startswith("warning: MCP server 'broken'")
    text = cli("tools", "w")
    assert "calc__add" in text.stdout and "warning: MCP server 'broken'" in text.stderr


def test_mcp_tools_may_be_named_in_legacy_lists_before_the_server_runs(cli: Any, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"calc": {"command": sys.executable, "args": [MCP_SERVER]}}}))
    shown = cli("world", "create", "w", "--mcp-config", str(config), "--allowed-tool", "calc__add",
                "--excluded-tool", "calc__*", "--allowed-tool", "read_*", "--json").json()  # fmt: skip
    assert (shown["allowedTools"], shown["excludedTools"]) == (["calc__add", "read_*"], ["calc__*"])


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ([{"name": "t", "parameters": {"type": "object", "properties": {"x": {"type": "strin"}}}}],
         "--client-tools: tool 't': parameters is not a valid JSON schema (properties/x/type:"),
        ([{"name": "t", "parameters": {"type": "string"}}], "parameters must be a JSON schema of type 'object'"),
        ([{"name": "has space"}], "--client-tools: tool name 'has space' must be 1-64 letters"),
        ([{"name": "t", "approval": {"scope": "forever"}}], "--client-tools: tool 't': approval must be an object"),
        ([{"name": "t", "parametres": {}}], "--client-tools: tool 't' has unknown keys: parametres"),
        ([{"name": "client.x"}], "reserved prefix 'client.'"),
        ([{"name": "read_file"}], "tool 'read_file' is registered twice"),
        ({"name": "t"}, "must hold a JSON list of tool objects"),
    ],
)
def test_client_tools_are_checked_in_full_when_set(
    cli: Any, tmp_path: Path, declared: Any, message: str
) -> None:
    file = tmp_path / "client-tools.json"
    file.write_text(json.dumps(declared))
    assert_one_line_error(cli("world", "create", "w", "--client-tools", str(file), check=False), message, code=1)
    assert cli("world", "list", "--json").json() == {"worlds": []}


def test_policy_files_mcp_config_and_lists_can_be_cleared(cli: Any, tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text('[[rule]]\ntoolName = "read_file"\ndecision = "allow"\npriority = 1\n')
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"calc": {"command": sys.executable, "args": [MCP_SERVER]}}}))
    tools = tmp_path / "client.json"
    tools.write_text(json.dumps([{"name": "locate", "parameters": {"type": "object"}}]))
    cli("world", "create", "w", "--policy", str(policy), "--mcp-config", str(config), "--client-tools", str(tools),
        "--allowed-tool", "read_file", "--excluded-tool", "list_files", "--tool-env", "LANG")  # fmt: skip

    cleared = cli("world", "update", "w", "--policy", "", "--mcp-config", "", "--client-tools", "",
                  "--allowed-tool", "", "--excluded-tool", "", "--tool-env", "", "--json").json()  # fmt: skip

    assert cleared["policyFiles"] == [] and cleared["mcpConfig"] is None and cleared["clientTools"] == []
    assert (cleared["allowedTools"], cleared["excludedTools"], cleared["toolEnv"]) == ([], [], [])


def test_a_password_in_an_agents_base_url_is_never_printed(cli: Any) -> None:
    _world(cli)
    url = "http://bot:hunter2pass@127.0.0.1:9/v1"
    shown = "http://bot:[REDACTED:url_password]@127.0.0.1:9/v1"
    created = cli("agent", "create", "w", "a", "--provider", "openai", "--model", "m", "--base-url", url)
    printed = [created.stdout, cli("agent", "show", "w", "a").stdout,
               cli("agent", "show", "w", "a", "--json").stdout, cli("agent", "list", "w", "--json").stdout]  # fmt: skip
    assert all("hunter2pass" not in text for text in printed), printed
    assert cli("agent", "show", "w", "a", "--json").json()["baseUrl"] == shown
    # Refused settings echo the URL, masked too; a mask itself is no password.
    bad_port = cli("agent", "update", "w", "a", "--base-url", "http://bot:hunter2pass@127.0.0.1:99999/v1", check=False)
    assert bad_port.code == 1 and "hunter2pass" not in bad_port.stdout + bad_port.stderr
    assert "[REDACTED:url_password]" in bad_port.stderr and "invalid port" in bad_port.stderr
    masked = cli("agent", "update", "w", "a", "--base-url", shown, check=False)
    assert masked.code == 1 and "give the password itself" in masked.stderr


def test_an_agents_base_url_can_be_cleared(cli: Any) -> None:
    _world(cli)
    cli("agent", "create", "w", "a", "--provider", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert cli("agent", "update", "w", "a", "--base-url", "", "--json").json()["baseUrl"] is None


# -- hooks ---------------------------------------------------------------------------------------


def test_a_hook_module_that_fails_to_import_is_one_line(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "broken_hook_mod.py").write_text("raise RuntimeError('boom at import')\n")
    result = cli("world", "create", "w", "--hook", "broken_hook_mod:on_event", check=False,
                 env={"PYTHONPATH": str(tmp_path)})  # fmt: skip
    assert_one_line_error(result, "--hook: cannot load hook 'broken_hook_mod:on_event': importing it raised RuntimeError: boom at import", code=1)


def test_a_hook_that_is_not_importable_says_how_to_make_it_so(cli: Any) -> None:
    result = cli("world", "create", "w", "--hook", "hook_nowhere_xyz:on_event", check=False)
    assert_one_line_error(result, "No module named 'hook_nowhere_xyz'; the module must be importable", code=1)
    assert "PYTHONPATH" in result.stderr


def test_a_hook_on_the_python_path_is_accepted(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "fine_hook_mod.py").write_text("def on_event(event, respond):\n    return None\n")
    shown = cli("world", "create", "w", "--hook", "fine_hook_mod:on_event", "--json",
                env={"PYTHONPATH": str(tmp_path)}).json()  # fmt: skip
    assert shown["hooks"] == ["fine_hook_mod:on_event"]


# -- provider settings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pasted",
    ["sk-proj-abcdefghijklmnop1234567890", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "bad name"],
)
def test_a_key_pasted_as_api_key_env_is_refused_and_never_stored_or_echoed(
    cli: Any, pasted: str
) -> None:
    # SPEC §3: keys are never stored. --api-key-env takes a variable's name; a key typed
    # there would land in the agents table and, at the first turn, in the transcript.
    _world(cli)
    for command in (
        ("agent", "create", "w", "k1", "--provider", "openai", "--model", "gpt-4o-mini", "--api-key-env", pasted),
        ("agent", "update", "w", "a0", "--api-key-env", pasted),
    ):
        if command[1] == "update":
            cli("agent", "create", "w", "a0", "--provider", "openai", "--model", "gpt-4o-mini")
        result = cli(*command, check=False)
        assert_one_line_error(result, "--api-key-env: give the name of the environment variable", code=1)
        assert pasted not in result.stderr
    shown = cli("agent", "show", "w", "a0", "--json").json()
    assert shown.get("apiKeyEnv") is None
    assert [a["name"] for a in cli("agent", "list", "w", "--json").json()["agents"]] == ["a0"]


def test_a_variable_name_is_kept_as_api_key_env(cli: Any) -> None:
    _world(cli)
    cli("agent", "create", "w", "k1", "--provider", "openai", "--model", "m", "--api-key-env", "MY_OPENAI_KEY")
    assert cli("agent", "show", "w", "k1", "--json").json()["apiKeyEnv"] == "MY_OPENAI_KEY"


def test_an_empty_model_is_refused(cli: Any) -> None:
    _world(cli)
    result = cli("agent", "create", "w", "k1", "--provider", "openai", "--model", " ", check=False)
    assert_one_line_error(result, "--model: a model name is required", code=1)
