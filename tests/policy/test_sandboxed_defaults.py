"""Read-only commands run without asking when the world's commands are sandboxed.

``sandboxed_defaults.toml`` is loaded only when the sandbox is active: listing, reading and
searching lines are allowed when every command in them is read-only and fully understood;
an option that runs a command or writes a file, a redirection, or a file that usually holds
credentials is still asked about. Without a sandbox nothing changes: every line asks. The
world-level tests go through ``AgentWorld.check_tool_call`` and the CLI's ``policy test``,
the runtime's own authorizer path, with real bubblewrap deciding whether the sandbox is active.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld import AgentWorld
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.rules import PolicyDecision
from agentworld.runtime.authorizer import ADMIN_POLICY_ENV, PolicyFiles, load_rules
from agentworld.tools.sandbox import bubblewrap_problem

ALLOW, DENY, ASK = PolicyDecision.ALLOW, PolicyDecision.DENY, PolicyDecision.ASK_USER


@pytest.fixture(autouse=True)
def no_admin_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ADMIN_POLICY_ENV, raising=False)


def engine(*, sandboxed: bool, mode: str = "default") -> PolicyEngine:
    return PolicyEngine(load_rules(PolicyFiles(), sandboxed=sandboxed).rules, mode=mode, sandboxed=sandboxed)


def decide(policy: PolicyEngine, line: str, **extra: Any) -> PolicyDecision:
    return policy.evaluate("shell_cmd", {"command": line, **extra}).decision


READ_ONLY = [
    "ls",
    "ls -la src",
    "pwd",
    "cat README.md",
    "head -n 20 src/app.py",
    "tail -5 log.txt",
    "wc -l *.py",
    "grep -rn TODO src",
    "rg --line-number 'def main' src",
    "find . -name '*.py' -type f",
    "find . -name '*.py' -exec grep -l TODO {} +",
    "tree -L 2",
    "file README.md",
    "stat README.md",
    "du -sh .",
    "diff a.txt b.txt",
    "git status",
    "git status --short",
    "git log --oneline -10",
    "git diff HEAD~1 -- src",
    "git show HEAD:README.md",
    "git branch",
    "git branch -a",
    "git branch --show-current",
    "ls src | wc -l",
    "cat a.txt | grep x | sort | uniq -c",
    "git log --oneline | head -5",
    "ls 2>/dev/null",
    "grep -c x a.txt 2>&1",
]


@pytest.mark.parametrize("line", READ_ONLY)
def test_read_only_lines_are_allowed_in_a_sandbox(line: str) -> None:
    assert decide(engine(sandboxed=True), line) is ALLOW


@pytest.mark.parametrize("line", READ_ONLY)
def test_without_a_sandbox_read_only_lines_still_ask(line: str) -> None:
    assert decide(engine(sandboxed=False), line) is ASK


@pytest.mark.parametrize(
    "line",
    [
        # writes a file: a redirection, or an option that writes
        "ls > listing.txt",
        "cat a >> b",
        "sort -o out.txt in.txt",
        "find . -name '*.o' -delete",
        "find . -fprint out.txt",
        "tree -o out.txt",
        "git diff --output=patch.diff",
        # runs a command we cannot read, or one not on the list
        "find . -exec rm {} +",
        "find . -exec sh -c 'rm x' \\;",
        "rg --pre ./script.sh x",
        "git -c alias.st='!rm -rf .' st",
        "git log --show-signature",
        "git branch -D main",
        "git branch new-feature",
        "git branch -m old new",
        "git push",
        "git commit -m x",
        "echo done",  # printing is not reading: asked, like any command off the list
        "ls && rm -rf src",
        "cat a | sh",
        "ls $(rm x)",
        "xargs cat < list",
        "sort --compress-program=./x a",
        # names files that usually hold credentials (the model reads what cat prints)
        "cat .env",
        "cat .e''nv",
        "cat config/.env.local",
        "head ~/.ssh/id_rsa",
        "cat .aws/credentials",
        "grep KEY .env",
        "cat server.pem",
        "cat .e*",
        "cat .*",
        "cat .{env,x}",
        "cat /etc/shadow",
        "cat /tmp/../etc//shadow",
        "cat ../../../../../etc/shadow",
        "head /etc/ssh/ssh_host_ed25519_key",
        "cat /etc/shad?w",
        "cat /etc/{shadow,x}",
        "grep root /etc/sudoers",
        # assignments, unknown programs, lines outside the understood subset
        "LD_PRELOAD=./x.so ls",
        "$CMD status",
        "for f in *; do cat $f; done",
        "cat /proc/self/environ",
    ],
)
def test_writing_running_or_secret_reading_lines_still_ask_in_a_sandbox(line: str) -> None:
    assert decide(engine(sandboxed=True), line) is not ALLOW


def test_a_world_rule_still_overrides_the_sandboxed_list() -> None:
    from agentworld.policy.loader import load_policy_text

    world = load_policy_text(
        '[[rule]]\ntoolName = "shell_cmd"\ncommandPrefix = "cat"\ndecision = "deny"\npriority = 1\n',
        source="world.toml",
    ).rules
    rules = load_rules(PolicyFiles(), sandboxed=True).rules + world
    assert decide(PolicyEngine(rules, sandboxed=True), "cat README.md") is DENY
    assert decide(PolicyEngine(rules, sandboxed=True), "ls") is ALLOW


def test_the_directory_argument_moves_reads_out_of_the_allowed_list() -> None:
    assert decide(engine(sandboxed=True), "cat credentials", directory=".aws") is not ALLOW
    assert decide(engine(sandboxed=True), "cat shadow", directory="/etc") is not ALLOW


@pytest.mark.parametrize("line", ["cat /etc/os-release", "ls /etc", "grep -r TODO src/etc", "cat .gitignore"])
def test_ordinary_system_and_dot_files_stay_allowed(line: str) -> None:
    assert decide(engine(sandboxed=True), line) is ALLOW


# --- the runtime's path: a world, its sandbox state, `policy test` --------------------------

def test_bubblewrap_can_make_a_sandbox_here() -> None:
    # The world-level tests below need real containment (scripts/test installs bubblewrap).
    assert bubblewrap_problem() is None


async def test_a_sandboxed_world_allows_read_only_lines_and_one_without_asks(
    aw: AgentWorld, tmp_path: Path
) -> None:
    await aw.create_world("boxed", working_dir=str(tmp_path), sandbox="on")
    await aw.create_world("open", working_dir=str(tmp_path), sandbox="off")
    args = {"command": "git status && ls -la"}
    boxed = await aw.check_tool_call("boxed", "shell_cmd", args)
    opened = await aw.check_tool_call("open", "shell_cmd", args)
    assert boxed.decision is ALLOW
    assert boxed.rule is not None and boxed.rule.source == "built-in sandboxed defaults"
    assert opened.decision is ASK
    rules = [r.source for r in await aw.policy_rules("boxed")]
    assert "built-in sandboxed defaults" in rules
    assert "built-in sandboxed defaults" not in [r.source for r in await aw.policy_rules("open")]


async def test_in_a_sandboxed_yolo_world_a_deny_rule_no_longer_makes_scripts_ask(
    aw: AgentWorld, tmp_path: Path
) -> None:
    policy = tmp_path / "deny-rm.toml"
    policy.write_text('[[rule]]\ntoolName = "shell_cmd"\ncommandPrefix = "rm"\ndecision = "deny"\npriority = 100\n')
    for name, sandbox in (("boxed", "on"), ("open", "off")):
        await aw.create_world(
            name, working_dir=str(tmp_path), sandbox=sandbox, policy_mode="yolo", policy_files=[str(policy)]
        )
    script = {"command": "python3 build.py"}
    assert (await aw.check_tool_call("boxed", "shell_cmd", script)).decision is ALLOW
    assert (await aw.check_tool_call("open", "shell_cmd", script)).decision is ASK
    for name in ("boxed", "open"):
        assert (await aw.check_tool_call(name, "shell_cmd", {"command": "sudo rm -rf x"})).decision is DENY


async def test_policy_test_with_a_world_shows_what_its_sandboxed_runtime_decides(
    aw: AgentWorld, cli: Any, tmp_path: Path
) -> None:
    for name, sandbox in (("boxed", "on"), ("open", "off")):
        await aw.create_world(name, working_dir=str(tmp_path), sandbox=sandbox)
    line = json.dumps({"command": "rg TODO src"})
    boxed = cli("policy", "test", "boxed", "--tool", "shell_cmd", "--args", line, "--json").json()
    opened = cli("policy", "test", "open", "--tool", "shell_cmd", "--args", line, "--json").json()
    assert boxed["decision"] == "ALLOW"
    assert boxed["rule"]["source"] == "built-in sandboxed defaults"
    assert opened["decision"] == "ASK_USER"
