"""A world's containment through the CLI (SPEC C1): the settings, what ``world show``,
``tools`` and every approval view say, and the start-up warning where no sandbox can be made.

Every command is a real ``agentworld`` process with real bubblewrap; "no sandbox here" is a
machine whose bubblewrap is elsewhere (``$AGENTWORLD_BWRAP`` naming nothing), since the one
installed cannot be taken away from the suite.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest

from agentworld.cli.worlds import NETWORK_MODES, SANDBOX_MODES
from agentworld.models.domain import NetworkMode, SandboxMode
from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec

NO_BWRAP = {"AGENTWORLD_BWRAP": "/nonexistent/bwrap"}
TOUCH_ALLOWED = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = "touch"
decision = "allow"
priority = 100
"""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


@pytest.fixture
def world(cli: Any, script: Any, server: OpenAIWireServer, work: Path) -> str:
    """World ``w1`` working in ``work``, whose agent a1 runs the shell line a message names."""

    def reply(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text("result: " + last["content"])
        line = last["content"].split("run: ", 1)[1]
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": line})))

    script.by_agent["a1"] = reply
    cli("world", "create", "w1", "--working-dir", str(work))
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")
    return "w1"


def test_the_cli_offers_exactly_the_settings_the_model_takes() -> None:
    assert (get_args(SandboxMode), get_args(NetworkMode)) == (SANDBOX_MODES, NETWORK_MODES)


def test_world_create_and_update_set_the_sandbox_and_network_and_show_them(cli: Any, work: Path) -> None:
    created = cli("world", "create", "w1", "--working-dir", str(work), "--json").json()
    assert (created["sandbox"], created["network"]) == ("auto", "deny")

    updated = cli("world", "update", "w1", "--sandbox", "on", "--network", "allow", "--json").json()
    assert (updated["sandbox"], updated["network"]) == ("on", "allow")
    shown = cli("world", "show", "w1")
    assert f"containment: sandboxed: writes only in {work}, network allowed" in shown.stdout
    assert shown.stderr == ""
    off = cli("world", "create", "w2", "--sandbox", "off", "--json").json()
    assert off["sandbox"] == "off"


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("--sandbox", "maybe", "error: --sandbox must be one of auto, on, off, not 'maybe'\n"),
        ("--network", "open", "error: --network must be one of deny, allow, not 'open'\n"),
    ],
)
def test_a_bad_setting_is_a_one_line_error_and_nothing_changes(
    cli: Any, option: str, value: str, reason: str
) -> None:
    cli("world", "create", "w1")
    refused = cli("world", "update", "w1", option, value, check=False)
    assert (refused.code, refused.stderr, refused.stdout) == (2, reason, "")
    assert cli("world", "show", "w1", "--json").json()["sandbox"] == "auto"
    assert cli("world", "create", "w2", option, value, check=False).code == 2
    assert cli("world", "show", "w2", check=False).code == 1


def test_world_show_says_where_no_sandbox_can_be_made(cli: Any, work: Path) -> None:
    cli("world", "create", "w1", "--working-dir", str(work))
    cli("world", "create", "w2", "--sandbox", "on")
    cli("world", "create", "w3", "--sandbox", "off")

    auto = cli("world", "show", "w1", env=NO_BWRAP)
    assert "containment: NOT sandboxed (no bubblewrap at $AGENTWORLD_BWRAP" in auto.stdout
    assert auto.stderr.startswith("warning: world w1: no sandbox can be made here") and "UNCONTAINED" in auto.stderr
    on = cli("world", "show", "w2", "--json", env=NO_BWRAP)
    assert json.loads(on.stdout)["sandbox"] == "on"
    assert "shell tools will refuse to run" in on.stderr
    off = cli("world", "show", "w3", env=NO_BWRAP)
    assert "NOT sandboxed (sandbox off)" in off.stdout and off.stderr == ""


def test_send_warns_on_stderr_and_json_stays_one_document(cli: Any, world: str, work: Path) -> None:
    sent = cli("send", world, "@a1 run: touch ran", "--json", env=NO_BWRAP)
    document = json.loads(sent.stdout)  # exactly one document: the warning is not in it
    assert sent.stderr.startswith(f"warning: world {world}: no sandbox can be made here")
    (approval,) = document["pendingApprovals"]
    assert approval["sandbox"] == {"active": False, "writable": [str(work)], "network": "deny"}


def test_with_sandbox_on_and_none_to_be_had_the_shell_refuses_and_nothing_runs(
    cli: Any, world: str, work: Path, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(TOUCH_ALLOWED)
    cli("world", "update", world, "--sandbox", "on", "--policy", str(policy))

    sent = cli("send", world, "@a1 run: touch ran", "--json", env=NO_BWRAP)

    assert "shell tools will refuse to run" in sent.stderr
    result = next(m for m in json.loads(sent.stdout)["messages"] if m["role"] == "tool")
    assert "sandbox setting is \\\"on\\\"" in result["content"] and "nothing ran" in result["content"]
    assert not (work / "ran").exists()
    contained = cli("send", world, "@a1 run: touch ran", "--json")  # bubblewrap back: it runs
    assert contained.stderr == "" and (work / "ran").exists()


def test_with_sandbox_on_and_none_to_be_had_nobody_is_asked_about_a_shell_call(
    cli: Any, world: str, work: Path
) -> None:
    cli("world", "update", world, "--sandbox", "on")

    sent = json.loads(cli("send", world, "@a1 run: touch asked", "--json", env=NO_BWRAP).stdout)

    assert sent["pendingApprovals"] == []
    result = next(m for m in sent["messages"] if m["role"] == "tool")
    assert "nothing ran" in result["content"]
    assert not (work / "asked").exists()


def test_every_text_approval_view_says_where_the_command_runs(cli: Any, world: str, work: Path) -> None:
    sent = cli("send", world, "@a1 run: touch ran")
    line = f"sandbox:      sandboxed: writes only in {work}, no network"
    assert line in sent.stdout
    listed = cli("approvals", world)
    assert line in listed.stdout
    transcript = cli("messages", world)  # the request in the transcript says it too
    assert f"sandbox: sandboxed: writes only in {work}, no network" in transcript.stdout

    uncontained = cli("send", world, "@a1 run: touch other", env=NO_BWRAP)
    later = cli("approvals", world)  # what was shown when asked, whatever this process finds
    assert "sandbox:      NOT sandboxed (no bubblewrap at $AGENTWORLD_BWRAP" in uncontained.stdout
    assert later.stdout.count("NOT sandboxed (no bubblewrap") == 1
    assert later.stdout.count(line) == 1


def test_tools_shows_the_sandbox_line(cli: Any, world: str, work: Path) -> None:
    listed = cli("tools", world)
    assert f"sandbox: sandboxed: writes only in {work}, no network" in listed.stdout
    document = cli("tools", world, "--json").json()
    assert document["sandbox"] == {
        "active": True,
        "writable": [str(work)],
        "network": "deny",
        "summary": f"sandboxed: writes only in {work}, no network",
    }
    without = cli("tools", world, env=NO_BWRAP)
    assert "UNCONTAINED" in without.stderr


def _approve_the_one_pending(cli: Any, world: str, **env: str) -> dict[str, Any]:
    [request] = cli("approvals", world, "--json").json()["approvals"]
    answered = cli("approve", world, request["approvalId"], "--decision", "approve", "--json", env=env)
    return dict(json.loads(answered.stdout))


def test_a_call_approved_as_contained_never_runs_uncontained(cli: Any, world: str, work: Path) -> None:
    cli("send", world, "@a1 run: touch boxed")

    answered = _approve_the_one_pending(cli, world, **NO_BWRAP)

    result = [m for m in answered["messages"] if m["role"] == "tool"][-1]
    assert "not run: it was approved as" in result["content"] and "NOT sandboxed" in result["content"]
    assert not (work / "boxed").exists()


def test_a_call_approved_without_network_does_not_run_once_the_world_allows_it(
    cli: Any, world: str, work: Path
) -> None:
    cli("send", world, "@a1 run: touch netless")
    cli("world", "update", world, "--network", "allow")

    answered = _approve_the_one_pending(cli, world)

    result = [m for m in answered["messages"] if m["role"] == "tool"][-1]
    assert "network allowed" in result["content"]
    assert not (work / "netless").exists()


def test_a_call_shown_uncontained_may_run_contained(cli: Any, world: str, work: Path) -> None:
    cli("send", world, "@a1 run: touch shown-open", env=NO_BWRAP)

    _approve_the_one_pending(cli, world)

    assert (work / "shown-open").exists()


def test_a_call_approved_as_contained_runs_in_the_same_box(cli: Any, world: str, work: Path) -> None:
    cli("send", world, "@a1 run: touch same-box")

    _approve_the_one_pending(cli, world)

    assert (work / "same-box").exists()


ALLOW_WRITES = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["touch", "cp", "cat", "wc", "echo", "rm", "bash"]
decision = "allow"
allowRedirection = true
priority = 100
"""


def test_a_contained_command_cannot_rewrite_the_policy_or_see_the_database_in_its_working_directory(
    cli: Any, script: Any, server: OpenAIWireServer, work: Path
) -> None:
    """A policy file and the database kept in the working directory: a command the policy
    allows, writing there, may not loosen the rules that judge it nor read or forge grants."""
    policy = work / "policy.toml"
    policy.write_text(ALLOW_WRITES)
    database = work / "world.db"
    db = f"sqlite:///{database}"

    def reply(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text("result: " + last["content"])
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": (
            "cat world.db | wc -c; "
            "bash -c 'echo \"[[rule]]\" >> policy.toml'; rm -f policy.toml; "
            "cp /dev/null world.db; echo forged > world.db-wal; touch fresh"
        )})))

    script.by_agent["a1"] = reply
    cli("world", "create", "w1", "--working-dir", str(work), "--policy", str(policy), db=db)
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1", db=db)
    before = database.stat().st_size

    sent = json.loads(cli("send", "w1", "@a1 go", "--json", db=db).stdout)

    assert sent["pendingApprovals"] == []
    [result] = [json.loads(m["content"]) for m in sent["messages"] if m["role"] == "tool"]
    assert result["stdout"].split()[0] == "0"  # the database reads as empty inside
    assert policy.read_text() == ALLOW_WRITES
    assert database.stat().st_size >= before > 0
    assert (work / "fresh").exists()  # the rest of the working directory stays writable
    assert cli("world", "show", "w1", "--json", db=db).json()["policyFiles"] == [str(policy)]
