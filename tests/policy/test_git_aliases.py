"""A git word that is not one of git's own commands is an alias or a ``git-NAME`` program:
``alias.st = !touch x`` in the repository's ``.git/config`` makes ``git st`` run a shell
command. A rule for ``git`` does not allow it, and an approval of ``git status`` does not
cover it (a session grant of ``git status`` must not run ``git st``)."""

from __future__ import annotations

import pytest

from agentworld.approval.grants import find_covering_grant, grant_for
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, Tier
from agentworld.runtime.authorizer import decide_call

GIT_ALLOWED = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["git"]
decision = "allow"
priority = 100
"""


def engine() -> PolicyEngine:
    loaded = load_policy_text(GIT_ALLOWED, source="policy.toml", tier=Tier.USER)
    assert loaded.errors == []
    return PolicyEngine(loaded.rules)


@pytest.mark.parametrize("command", ["git st", "git co main", "git frobnicate", "git -C sub lg", "git hook run pre-commit"])
def test_an_alias_or_helper_is_asked_about_under_a_rule_for_git(command: str) -> None:
    assert engine().evaluate("shell_cmd", {"command": command}).decision is PolicyDecision.ASK_USER


@pytest.mark.parametrize(
    "command", ["git status", "git log -n 3", "git diff --stat", "git stash list", "git --no-pager show HEAD"]
)
def test_gits_own_commands_are_still_allowed(command: str) -> None:
    assert engine().evaluate("shell_cmd", {"command": command}).decision is PolicyDecision.ALLOW


def test_a_session_approval_of_git_status_does_not_cover_an_alias() -> None:
    grant = grant_for(
        "session", world="w", tool_name="shell_cmd", arguments={"command": "git status"},
        agent="a", chat_id="c1", approval_id="ap1",
    )  # fmt: skip
    assert grant is not None
    later = {"command": "git st"}
    assert find_covering_grant([grant], "shell_cmd", later, agent="a", chat_id="c1") is None
    asking = PolicyEngine(load_policy_text("", source="none.toml", tier=Tier.USER).rules)
    verdict = decide_call(asking, "shell_cmd", later, grants=[grant], agent="a", chat_id="c1")
    assert verdict.decision is PolicyDecision.ASK_USER
