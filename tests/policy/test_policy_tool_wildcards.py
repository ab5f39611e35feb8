"""``toolName`` wildcards (SPEC P1, P3): ``*`` is every tool, ``prefix*`` every tool so named.

A ``toolName = "*"`` compared as the literal name ``*`` would make a "deny everything" rule
that denies nothing; it denies every call, and a star anywhere but at the end is an error
rather than a rule that can never match.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, PolicyRule

ALLOW = PolicyDecision.ALLOW
DENY = PolicyDecision.DENY
ASK = PolicyDecision.ASK_USER

CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "shell": ("shell_cmd", {"command": "ls -la"}),
    "read_file": ("read_file", {"path": "a.txt"}),
    "mcp": ("github__create_issue", {"title": "x"}),
    "read_dir": ("read_dir", {}),
    "reader": ("reader", {}),
    "write_file": ("write_file", {"path": "a.txt"}),
}


def engine(toml: str) -> PolicyEngine:
    loaded = load_policy_text(toml, source="p.toml")
    assert loaded.errors == []
    return PolicyEngine(loaded.rules)


@pytest.mark.parametrize("call", ["shell", "read_file", "mcp", "read_dir", "write_file"])
def test_deny_star_denies_every_tool(call: str) -> None:
    policy = engine('[[rule]]\ntoolName = "*"\ndecision = "deny"\npriority = 1\n')
    result = policy.evaluate(*CALLS[call])
    assert result.decision is DENY
    assert result.rule is not None and result.rule.describe()["toolName"] == "*"


def test_deny_star_outranks_the_built_in_allows_of_its_tier_and_below() -> None:
    from agentworld.policy.loader import builtin_rules

    loaded = load_policy_text(
        '[[rule]]\ntoolName = "*"\ndecision = "deny"\npriority = 0\n', source="p"
    )
    policy = PolicyEngine([*builtin_rules(), *loaded.rules])
    assert policy.evaluate(*CALLS["read_file"]).decision is DENY  # built-in allows it at tier 1


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("read_file", ALLOW),
        ("read_dir", ALLOW),
        ("reader", ASK),  # starts with "read", not with "read_"
        ("write_file", ASK),
        ("shell", ASK),
        ("mcp", ASK),
    ],
)
def test_prefix_star_matches_the_tools_that_start_with_the_prefix(
    call: str, expected: PolicyDecision
) -> None:
    policy = engine('[[rule]]\ntoolName = "read_*"\ndecision = "allow"\npriority = 1\n')
    assert policy.evaluate(*CALLS[call]).decision is expected


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param('toolName = "github__*"', id="tool-name-server-star"),
        pytest.param('mcpName = "github"', id="mcp-name-alone"),
        pytest.param('mcpName = "github"\ntoolName = "*"', id="mcp-name-and-star"),
        pytest.param('mcpName = "github"\ntoolName = "create_*"', id="mcp-name-and-prefix-star"),
    ],
)
def test_server_wildcards_cover_only_that_servers_tools(fields: str) -> None:
    policy = engine(f'[[rule]]\n{fields}\ndecision = "deny"\npriority = 1\n')
    assert policy.evaluate("github__create_issue", {}).decision is DENY
    assert policy.evaluate("githubx__create_issue", {}).decision is ASK
    assert policy.evaluate("gitlab__create_issue", {}).decision is ASK
    assert policy.evaluate("read_file", {}).decision is ASK


def test_an_exact_rule_for_a_tool_whose_name_has_a_star_is_not_a_wildcard() -> None:
    # "Approve always" for a client tool literally named `notify*` must not cover `notify_all`.
    rule = PolicyRule(ALLOW, 2.95, tool_name="notify*", source="always:g1")
    policy = PolicyEngine([rule])
    assert policy.evaluate("notify*", {}).decision is ALLOW
    assert policy.evaluate("notify_all", {}).decision is ASK


def test_star_with_an_args_pattern_denies_any_tool_whose_arguments_match() -> None:
    policy = engine(
        '[[rule]]\ntoolName = "*"\nargsPattern = \'\\.ssh/\'\ndecision = "deny"\npriority = 1\n'
    )
    assert policy.evaluate("read_file", {"path": "~/.ssh/id_rsa"}).decision is DENY
    assert policy.evaluate("github__get", {"p": "/home/x/.ssh/config"}).decision is DENY
    assert policy.evaluate("read_file", {"path": "notes.md"}).decision is ASK
