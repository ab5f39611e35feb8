"""One form for everything the CLI shows (issue 14, what was left): one timestamp form and
``toolArgs`` objects in every JSON document, including ``pending`` and ``tool-logs``; one case
rule for world and agent names in every command; usage lines that read ``WORLD NAME``, an
option description for every option, and no internal references in help.

Real ``agentworld`` processes on a real SQLite file with the scripted model.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

CLIENT_TOOLS = [
    {
        "name": "ask_person",
        "description": "Ask the person at the client a question.",
        "parameters": {"type": "object", "properties": {"question": {"type": "string"}}},
    }
]


def world_with_client_call(cli: Any, tmp_path: Path) -> None:
    """World ``w``: agent ``a`` runs ``echo hi`` (allowed by a policy rule) and calls the
    client-side tool ``ask_person`` in one batch; the client call then waits."""
    work = tmp_path / "work"
    work.mkdir()
    tools = tmp_path / "client-tools.json"
    tools.write_text(json.dumps(CLIENT_TOOLS))
    policy = tmp_path / "echo.toml"
    policy.write_text('[[rule]]\ntoolName = "shell_cmd"\ncommandPrefix = "echo"\n'
                      'decision = "allow"\npriority = 100\n')  # fmt: skip
    script = tmp_path / "a.json"
    calls = [
        {"name": "shell_cmd", "arguments": {"command": "echo hi"}},
        {"name": "ask_person", "arguments": {"question": "which release?"}},
    ]
    script.write_text(json.dumps([{"tool_calls": calls}, "done"]))
    cli("world", "create", "w", "--no-streaming", "--working-dir", str(work),
        "--client-tools", str(tools), "--policy", str(policy))  # fmt: skip
    cli("agent", "create", "w", "a", "--provider", "scripted", "--model", f"file:{script}")
    cli("send", "w", "@a prepare the release")


def strings_under(document: Any, key: str) -> list[Any]:
    """Every value stored under ``key`` anywhere in the document."""
    if isinstance(document, dict):
        found = [v for k, v in document.items() if k == key]
        return found + [x for v in document.values() for x in strings_under(v, key)]
    if isinstance(document, list):
        return [x for item in document for x in strings_under(item, key)]
    return []


def assert_z_time(value: Any) -> None:
    assert isinstance(value, str) and value.endswith("Z") and "+00:00" not in value, value
    assert datetime.fromisoformat(value).utcoffset() is not None


# -- one timestamp form, arguments as objects ---------------------------------------------


def test_pending_calls_and_tool_logs_write_times_with_z_and_arguments_as_objects(
    cli: Any, tmp_path: Path
) -> None:
    world_with_client_call(cli, tmp_path)

    (call,) = cli("pending", "w", "--json").json()["pendingToolCalls"]
    (log,) = cli("tool-logs", "w", "--json").json()["toolLogs"]
    pending_text, logs_text = cli("pending", "w").stdout, cli("tool-logs", "w").stdout

    assert call["toolArgs"] == {"question": "which release?"}
    assert_z_time(call["createdAt"])
    assert (log["toolName"], log["input"], log["status"]) == ("shell_cmd", {"command": "echo hi"}, "ok")
    assert_z_time(log["startedAt"])
    assert_z_time(log["finishedAt"])
    assert '{"question": "which release?"}' in pending_text and '\\"' not in pending_text
    assert "+00:00" not in logs_text
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", logs_text), logs_text
    memory = cli("messages", "w", "--agent", "a", "--json").stdout
    assert "+00:00" not in memory


# -- one case rule for names --------------------------------------------------------------


def test_worlds_and_agents_are_found_whatever_the_case_they_are_typed_in(cli: Any) -> None:
    cli("world", "create", "Team", "--no-streaming")
    cli("agent", "create", "team", "Planner", "--provider", "scripted", "--model", "echo")

    sent = cli("send", "TEAM", "@PLANNER ship it", "--json").json()
    world = cli("world", "update", "tEaM", "--main-agent", "planner", "--json").json()
    agent = cli("agent", "show", "team", "pLaNnEr", "--json").json()
    memory = cli("messages", "team", "--agent", "planner", "--json").json()["messages"]
    decided = cli("policy", "test", "team", "--tool", "read_file", "--args", '{"path": "x"}', "--json")
    world_taken = cli("world", "create", "team", check=False)
    agent_taken = cli("agent", "create", "TEAM", "planner", "--provider", "scripted",
                      "--model", "echo", check=False)  # fmt: skip
    deleted = cli("world", "delete", "team", "--json").json()

    assert [m["sender"] for m in sent["messages"]] == ["human", "Planner"]
    assert (world["name"], world["mainAgent"]) == ("Team", "Planner")
    assert agent["name"] == "Planner"
    assert [m["content"] for m in memory] == ["@PLANNER ship it", "echo: @PLANNER ship it"]
    assert decided.json()["decision"] == "ALLOW"
    assert world_taken.code == 1 and "world 'Team' already exists" in world_taken.stderr
    assert agent_taken.code == 1 and "agent 'Planner' already exists in world 'Team'" in agent_taken.stderr
    assert deleted == {"deleted": "Team"}


# -- help -------------------------------------------------------------------------------

HELP_OF_EVERY_COMMAND = r"""
import contextlib, io, json, sys
import typer
from agentworld.cli.app import app
from agentworld.cli.entry import main

def paths(command, prefix):
    yield prefix
    if hasattr(command, "list_commands"):  # a group: its commands load as they are asked for
        ctx = typer.Context(command)
        for name in command.list_commands(ctx):
            yield from paths(command.get_command(ctx, name), [*prefix, name])

helps = {}
for path in paths(typer.main.get_command(app), []):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main([*path, "--help"])
    helps[" ".join(path)] = out.getvalue()
json.dump(helps, sys.stdout)
"""


def test_help_names_arguments_plainly_describes_every_option_and_cites_no_spec(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "COLUMNS": "250", "NO_COLOR": "1", "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", HELP_OF_EVERY_COMMAND], capture_output=True,
                          text=True, env=env, timeout=60, check=True)  # fmt: skip
    helps: dict[str, str] = json.loads(proc.stdout)

    assert {"world create", "agent show", "respond", "policy test", "talk"} <= set(helps)
    for command, text in helps.items():
        (usage,) = [line for line in text.splitlines() if "Usage:" in line]
        assert "{" not in usage and "}" not in usage, usage
        assert re.fullmatch(r"\s*Usage: agentworld[ a-z-]*( \[OPTIONS\])?( \[?[A-Z_]+\]?(\.\.\.)?)*( COMMAND \[ARGS\]\.\.\.)?\s*", usage), usage
        assert "SPEC" not in text and "§" not in text, command
        for row in re.findall(r"^│ (--[a-z-]+.*?)│$", text, re.M):
            described = re.search(r"<[^>]+>(?:\s+\[[^\]]*\])?\s+(\S.*)", row)
            assert described is not None, f"{command}: {row.strip()} has no description"
    assert "agentworld world show [OPTIONS] NAME" in helps["world show"]
    assert "agentworld agent show [OPTIONS] WORLD NAME" in helps["agent show"]
    assert "agentworld respond [OPTIONS] WORLD TOOL_CALL_ID" in helps["respond"]
    assert "agentworld policy test [OPTIONS] [WORLD]" in helps["policy test"]
