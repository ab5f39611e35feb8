"""End to end through the CLI: the API key in the CLI's own environment never reaches a
shell_cmd result, the transcript or the next model request; a world's --tool-env setting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

OPENAI_KEY = "sk-cli-test-0123456789abcdef"
ECHO_KEY = 'echo "key=[$OPENAI_API_KEY]"'


def shell_then_answer(command: str) -> Any:
    def respond(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("done")
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": command}), id="call_sh"))

    return respond


def _world(cli: Any, server: OpenAIWireServer, tmp_path: Path, *options: str) -> None:
    cli("world", "create", "w1", "--working-dir", str(tmp_path), *options)
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")


def _stored_result(cli: Any) -> str:
    memory = cli("messages", "w1", "--agent", "a1", "--json", env={"OPENAI_API_KEY": OPENAI_KEY}).json()
    (result,) = [m for m in memory["messages"] if m["role"] == "tool" and m["tool_call_id"] == "call_sh"]
    return str(json.loads(result["content"])["stdout"])


def test_the_cli_api_key_is_not_visible_to_an_approved_shell_command(
    cli: Any, server: OpenAIWireServer, script: Any, tmp_path: Path
) -> None:
    _world(cli, server, tmp_path)
    script.by_agent["a1"] = shell_then_answer(ECHO_KEY)
    key_env = {"OPENAI_API_KEY": OPENAI_KEY}

    sent = cli("send", "w1", "@a1 show the key", "--json", env=key_env).json()
    (approval,) = sent["pendingApprovals"]
    answered = cli("approve", "w1", approval["approvalId"], "--decision", "approve", "--json", env=key_env)

    assert _stored_result(cli) == "key=[]\n"
    assert OPENAI_KEY not in answered.stdout
    assert OPENAI_KEY not in json.dumps(server.requests)  # nor in the next model request
    assert OPENAI_KEY not in cli("tool-logs", "w1", "--json").stdout


def test_a_key_the_world_passes_on_purpose_is_masked_in_the_stored_result(
    cli: Any, server: OpenAIWireServer, script: Any, tmp_path: Path
) -> None:
    _world(cli, server, tmp_path, "--mode", "yolo", "--tool-env", "OPENAI_API_KEY", "--tool-env", "MY_VAR")
    assert cli("world", "show", "w1", "--json").json()["toolEnv"] == ["OPENAI_API_KEY", "MY_VAR"]
    script.by_agent["a1"] = shell_then_answer(ECHO_KEY + '; echo "my=$MY_VAR"')

    sent = cli("send", "w1", "@a1 show the key", "--json", env={"OPENAI_API_KEY": OPENAI_KEY, "MY_VAR": "visible"})

    assert _stored_result(cli) == "key=[[REDACTED:OPENAI_API_KEY]]\nmy=visible\n"
    assert OPENAI_KEY not in sent.stdout and OPENAI_KEY not in json.dumps(server.requests)


def test_a_tool_env_that_would_run_code_is_refused_in_one_line(cli: Any) -> None:
    refused = cli("world", "create", "w1", "--tool-env", "BASH_ENV", check=False)
    assert refused.code != 0 and "BASH_ENV" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    bad_name = cli("world", "create", "w1", "--tool-env", "NOT-A-NAME", "--json", check=False)
    assert bad_name.code != 0 and bad_name.stdout == "" and "not a variable name" in bad_name.stderr
    assert cli("world", "list", "--json").json() == {"worlds": []}


LC_KEY = "lc-key-value-0123456789abcdef"
SHOW_ENVIRONMENT = (
    'env; printf "%s" "$LC_SECRETKEY" | rev; echo; echo "length=${#LC_SECRETKEY}"; echo "lc_all=$LC_ALL"'
)


def _lc_key_world(cli: Any, server: OpenAIWireServer, tmp_path: Path, *options: str) -> None:
    cli("world", "create", "w1", "--working-dir", str(tmp_path), "--mode", "yolo", *options)
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m", "--base-url", server.base_url,
        "--api-key-env", "LC_SECRETKEY", "--system-prompt", "agent:a1")


def test_an_agent_key_held_in_an_lc_variable_never_reaches_a_shell_command(
    cli: Any, server: OpenAIWireServer, script: Any, tmp_path: Path
) -> None:
    _lc_key_world(cli, server, tmp_path)
    script.by_agent["a1"] = shell_then_answer(SHOW_ENVIRONMENT)
    env = {"LC_SECRETKEY": LC_KEY, "LC_ALL": "C.UTF-8", "OPENAI_API_KEY": OPENAI_KEY}

    sent = cli("send", "w1", "@a1 show your environment", "--json", env=env).json()

    # The agent's key was in use (the model answered), and the command saw none of it: not the
    # variable, nor its value in any spelling the output mask would not catch.
    assert sent["messages"][-1]["content"] == "done"
    output = _stored_result(cli)
    assert "LC_SECRETKEY" not in output and "REDACTED" not in output
    assert LC_KEY[::-1] not in output and "length=0\n" in output
    assert "lc_all=C.UTF-8\n" in output  # the locale itself still passes


def test_an_lc_key_variable_the_world_lists_passes_as_the_owners_choice(
    cli: Any, server: OpenAIWireServer, script: Any, tmp_path: Path
) -> None:
    _lc_key_world(cli, server, tmp_path, "--tool-env", "LC_SECRETKEY")
    script.by_agent["a1"] = shell_then_answer(SHOW_ENVIRONMENT)

    cli("send", "w1", "@a1 show your environment", "--json", env={"LC_SECRETKEY": LC_KEY})

    output = _stored_result(cli)
    assert f"length={len(LC_KEY)}\n" in output
    assert LC_KEY not in output and "LC_SECRETKEY=[REDACTED:LC_SECRETKEY]" in output
