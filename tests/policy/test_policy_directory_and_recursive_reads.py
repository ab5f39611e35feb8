"""Denied paths reached without being spelled: the shell tool's ``directory`` argument and
recursive reads that start outside the working directory (SPEC P4, A5).

Under ALLOW ``cat``/``grep``/… and a DENY path pattern for keys, ``{"command": "cat
credentials", "directory": ".aws"}`` would read ``.aws/credentials`` and ``grep -r KEY ..``
would print ``../.ssh/id_rsa``: no word of either spells the denied path. Such a call is asked
about (denied where nobody can answer) and never remembered; the same reads inside the
working directory stay allowed.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.approval.grants import grant_for
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, Tier
from agentworld.runtime.authorizer import decide_call

ALLOW = PolicyDecision.ALLOW
DENY = PolicyDecision.DENY
ASK = PolicyDecision.ASK_USER

DENY_PATHS = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["cat", "grep", "ls", "head", "less", "tail", "cd", "find", "rg", "du"]
decision = "allow"
priority = 100

[[rule]]
name = "no keys"
toolName = "*"
argsPattern = '\\.aws/|\\.ssh/|id_rsa'
decision = "deny"
priority = 900
"""


def engine(text: str) -> PolicyEngine:
    loaded = load_policy_text(text, source="policy.toml", tier=Tier.USER)
    assert loaded.errors == []
    return PolicyEngine(loaded.rules)


def decide(policy: str, arguments: dict[str, Any]) -> PolicyDecision:
    return engine(policy).evaluate("shell_cmd", arguments).decision


@pytest.mark.parametrize(
    "arguments",
    [
        {"command": "cat credentials", "directory": ".aws"},
        {"command": "cat credentials", "directory": "./.aws/"},
        {"command": "cat id_rsa", "directory": "home/.ssh"},
        {"command": "cat config", "directory": "x/../.ssh"},
        {"command": "head -n 5 credentials", "directory": ".aws"},
        {"command": "grep -r KEY", "directory": ".ssh"},
        {"command": "less credentials", "directory": ".aws"},
    ],
)
def test_the_directory_argument_cannot_hide_a_denied_path(arguments: dict[str, Any]) -> None:
    assert decide(DENY_PATHS, arguments) is not ALLOW


def test_a_file_in_an_unremarkable_directory_is_asked_about_and_never_remembered() -> None:
    arguments = {"command": "cat credentials", "directory": "sub"}
    assert decide(DENY_PATHS, arguments) is ASK
    grant = grant_for(
        "session", world="w", tool_name="shell_cmd", arguments={"command": "cat notes.txt"},
        agent="Alice", chat_id="c1", approval_id="a1",
    )  # fmt: skip
    assert grant is not None
    verdict = decide_call(
        engine(DENY_PATHS), "shell_cmd", {"command": "cat credentials", "directory": ".aws"},
        grants=[grant], agent="Alice", chat_id="c1", interactive=False,
    )  # fmt: skip
    assert verdict.decision is DENY


@pytest.mark.parametrize("directory", [None, "", ".", "./"])
def test_the_working_directory_itself_changes_nothing(directory: str | None) -> None:
    arguments: dict[str, Any] = {"command": "cat notes.txt"}
    if directory is not None:
        arguments["directory"] = directory
    assert decide(DENY_PATHS, arguments) is ALLOW


@pytest.mark.parametrize(
    "line",
    [
        "grep -r PRIVATE ..",
        "grep -r PRIVATE /root",
        "grep -R PRIVATE ~",
        "grep --recursive PRIVATE ../..",
        "grep -rl PRIVATE src/../..",
        "rg PRIVATE /root",
        "rg PRIVATE ..",
        "find / -name x",
        "find ~ -name x",
        "du -a /root",
        "ls -R /root",
        "cd .. && grep -r PRIVATE",
    ],
)
def test_a_recursive_read_from_outside_the_working_directory_is_asked_about(line: str) -> None:
    assert decide(DENY_PATHS, {"command": line}) is ASK


@pytest.mark.parametrize(
    "line",
    [
        "grep -r foo src",
        "grep -rn foo .",
        "rg foo",
        "find . -name '*.py'",
        "ls -R src",
        "grep foo /etc/hosts",
    ],
)
def test_a_recursive_read_inside_the_working_directory_stays_allowed(line: str) -> None:
    assert decide(DENY_PATHS, {"command": line}) is ALLOW

