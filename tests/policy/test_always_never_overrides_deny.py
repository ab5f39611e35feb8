"""An "approve always" rule (2.95) never overrides a DENY rule, whatever its priority (SPEC P6):
a person's "always" widens what is asked, never what the owner forbade."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.approval.grants import grant_for
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.grant_rules import always_rule
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, PolicyRule, Tier

ALLOW = PolicyDecision.ALLOW
DENY = PolicyDecision.DENY
ASK = PolicyDecision.ASK_USER
SHELL = "shell_cmd"


def file_rules(text: str, *, tier: int = Tier.USER) -> list[PolicyRule]:
    loaded = load_policy_text(text, source="owner.toml", tier=tier)
    assert loaded.errors == []
    return loaded.rules


def always(tool: str, arguments: dict[str, Any]) -> PolicyRule:
    grant = grant_for(
        "always", world="w", tool_name=tool, arguments=arguments, agent="a1", chat_id="c1",
        approval_id="approval_1",
    )
    assert grant is not None
    made = always_rule(grant)
    assert made is not None and made.priority == pytest.approx(2.95)
    return made


DENY_GIT_PUSH = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = "git push"
decision = "deny"
priority = 100
"""


def test_an_always_grant_does_not_beat_a_lower_priority_deny_rule() -> None:
    engine = PolicyEngine([*file_rules(DENY_GIT_PUSH), always(SHELL, {"command": "git push"})])

    result = engine.evaluate(SHELL, {"command": "git push origin main"})

    assert result.decision is DENY
    assert result.rule is not None and result.rule.source == "owner.toml"
    assert result.rule.priority == pytest.approx(2.1)


def test_what_the_deny_rule_does_not_match_stays_allowed_by_the_grant() -> None:
    engine = PolicyEngine([*file_rules(DENY_GIT_PUSH), always(SHELL, {"command": "git status"})])

    result = engine.evaluate(SHELL, {"command": "git status"})

    assert result.decision is ALLOW
    assert result.rule is not None and result.rule.from_approval


def test_every_part_of_a_line_is_held_to_the_deny_rules() -> None:
    """The grant for ``git`` allows ``git log``; the owner's DENY for ``git push`` still denies
    the line's other part, though the line's worst part is decided by another rule."""
    owner = file_rules(DENY_GIT_PUSH + '[[rule]]\ntoolName = "shell_cmd"\ncommandPrefix = "ls"\ndecision = "allow"\npriority = 900\n')
    engine = PolicyEngine([*owner, always(SHELL, {"command": "git log"})])

    assert engine.evaluate(SHELL, {"command": "ls && git log"}).decision is ALLOW
    assert engine.evaluate(SHELL, {"command": "ls && git push"}).decision is DENY


def test_an_admin_deny_and_a_builtin_deny_win_too() -> None:
    admin = file_rules(DENY_GIT_PUSH, tier=Tier.ADMIN)
    builtin = file_rules(DENY_GIT_PUSH, tier=Tier.BUILTIN)
    grant = always(SHELL, {"command": "git push"})

    assert PolicyEngine([*admin, grant]).evaluate(SHELL, {"command": "git push"}).decision is DENY
    assert PolicyEngine([*builtin, grant]).evaluate(SHELL, {"command": "git push"}).decision is DENY


def test_a_deny_rule_that_could_match_makes_the_granted_call_ask() -> None:
    """``cat`` is granted; ``cat ~/.s*/id_rsa`` may open ``~/.ssh/id_rsa``, which a DENY
    pattern forbids: the glob hides it from the pattern, so the call is asked about."""
    deny_ssh = file_rules("[[rule]]\ntoolName = \"shell_cmd\"\nargsPattern = '\\.ssh'\ndecision = \"deny\"\npriority = 1\n")
    engine = PolicyEngine([*deny_ssh, always(SHELL, {"command": "cat notes.txt"})])

    assert engine.evaluate(SHELL, {"command": "cat notes.txt"}).decision is ALLOW
    assert engine.evaluate(SHELL, {"command": "cat ~/.ssh/id_rsa"}).decision is DENY
    assert engine.evaluate(SHELL, {"command": "cat ~/.s*/id_rsa"}).decision is ASK


def test_other_tools_grants_are_held_to_deny_rules_as_well() -> None:
    deny = file_rules("[[rule]]\ntoolName = \"fetch\"\nargsPattern = 'internal'\ndecision = \"deny\"\npriority = 5\n")
    engine = PolicyEngine([*deny, always("fetch", {"url": "https://internal.example"})])

    assert engine.evaluate("fetch", {"url": "https://internal.example"}).decision is DENY
    assert engine.evaluate("fetch", {"url": "https://example.org"}).decision is ALLOW


def test_in_yolo_mode_a_granted_call_is_still_denied() -> None:
    engine = PolicyEngine([*file_rules(DENY_GIT_PUSH), always(SHELL, {"command": "git push"})], mode="yolo")

    assert engine.evaluate(SHELL, {"command": "git push"}).decision is DENY
    assert engine.evaluate(SHELL, {"command": "git status"}).decision is ALLOW


def test_an_ask_rule_above_the_grant_still_asks_and_one_below_does_not() -> None:
    """P6 narrows only what a DENY rule forbids: ASK rules keep their place by priority."""
    ask_admin = file_rules(DENY_GIT_PUSH.replace("deny", "ask_user"), tier=Tier.ADMIN)
    ask_user = file_rules(DENY_GIT_PUSH.replace("deny", "ask_user"))
    grant = always(SHELL, {"command": "git push"})

    assert PolicyEngine([*ask_admin, grant]).evaluate(SHELL, {"command": "git push"}).decision is ASK
    assert PolicyEngine([*ask_user, grant]).evaluate(SHELL, {"command": "git push"}).decision is ALLOW
