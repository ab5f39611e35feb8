"""Options that hide a command, and DENY patterns beaten by spelling (SPEC P1, P4, P5, P6; "a
tool call is ALLOWed only when we fully understand what it will do").

* a program allowed by a rule (or an "approve always" grant) given an option that runs a
  command: ``git -c alias.x='!rm …' x`` under "allow git, deny rm";
* a DENY ``argsPattern`` beaten by quoting (``~/.s"s"h/``): it is also searched in the
  words after quote removal;
* a DENY pattern beaten by a glob, an empty variable or a brace (``/etc/shado?``): a pattern
  that misses a part with such a word "could match" it, so a person is asked;
* files written through options (``sort -o``) under a rule without ``allowRedirection``.
"""

from __future__ import annotations

import pytest

from agentworld.approval.grants import Grant
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.grant_rules import always_rule
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, PolicyRule, Tier

ALLOW = PolicyDecision.ALLOW
DENY = PolicyDecision.DENY
ASK = PolicyDecision.ASK_USER


def engine(text: str, *extra: PolicyRule, mode: str = "default") -> PolicyEngine:
    loaded = load_policy_text(text, source="policy.toml", tier=Tier.USER)
    assert loaded.errors == []
    return PolicyEngine([*loaded.rules, *extra], mode=mode)


def decide(policy: PolicyEngine, command: str) -> PolicyDecision:
    return policy.evaluate("shell_cmd", {"command": command}).decision


ALLOW_PROGRAMS_DENY_RM = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["git", "sed", "sort", "man", "rg", "tar", "cat"]
decision = "allow"
priority = 500

[[rule]]
toolName = "shell_cmd"
commandPrefix = "rm"
decision = "deny"
priority = 600
"""


@pytest.mark.parametrize(
    "command",
    [
        "git -c alias.x='!rm -f victim' x",
        "git grep -O'r\"\"m -f victim' hello",
        "sed -n '1e r\"\"m -f victim' file.txt",
        "sed 's/.*/rm -f victim/e' file.txt",
        "man -P 'rm -f victim' ls",
        "rg --pre ./evil needle",
        "tar --to-command='rm -f victim' -xf a.tar",
    ],
)
def test_an_allowed_program_running_a_hidden_command_is_asked_about(command: str) -> None:
    assert decide(engine(ALLOW_PROGRAMS_DENY_RM), command) is ASK


@pytest.mark.parametrize("command", ["git status --short", "sed -n '/a/,/b/p' f", "sort -n f", "man ls"])
def test_the_allowed_programs_are_still_allowed_as_written(command: str) -> None:
    assert decide(engine(ALLOW_PROGRAMS_DENY_RM), command) is ALLOW


def test_an_always_grant_for_git_does_not_cover_git_running_an_alias() -> None:
    grant = Grant("g1", "w", "always", "shell_cmd", roots=frozenset({"git"}))
    rule = always_rule(grant)
    assert rule is not None
    policy = engine("", rule)
    assert decide(policy, "git status --short") is ALLOW
    assert decide(policy, "git -c alias.x='!rm -f victim' x") is ASK


@pytest.mark.parametrize("command", ["sort -o out f", "sed -i s/a/b/ f", "git log --output=o.txt", "uniq a b"])
def test_a_file_written_through_an_option_needs_allow_redirection(command: str) -> None:
    assert decide(engine(ALLOW_PROGRAMS_DENY_RM.replace("cat", "uniq")), command) is ASK
    allowing = ALLOW_PROGRAMS_DENY_RM.replace("cat", "uniq").replace(
        'priority = 500', 'priority = 500\nallowRedirection = true', 1
    )
    assert decide(engine(allowing), command) is ALLOW


NO_SECRETS = """
[[rule]]
toolName = "shell_cmd"
argsPattern = '\\.ssh/|\\.aws/'
decision = "deny"
priority = 900

[[rule]]
toolName = "shell_cmd"
commandPrefix = ["cat", "head"]
decision = "allow"
priority = 500
"""


@pytest.mark.parametrize(
    "command",
    ['cat ~/.s"s"h/id_ed25519', "cat ~/.s''sh/id_ed25519", "cat ~/.\\ssh/id_ed25519", "cat ~/.aw's'/credentials"],
)
def test_a_deny_pattern_sees_through_quotes(command: str) -> None:
    assert decide(engine(NO_SECRETS), command) is DENY


@pytest.mark.parametrize("command", ["cat ~/.ss?/id_ed25519", "cat ~/.ss[h]/id_ed25519", "cat ~/.ss*/id"])
def test_a_deny_pattern_that_a_glob_could_match_asks(command: str) -> None:
    assert decide(engine(NO_SECRETS), command) is ASK


NO_SHADOW = """
[[rule]]
toolName = "shell_cmd"
commandRegex = '/etc/shadow|id_rsa'
decision = "deny"
priority = 900

[[rule]]
toolName = "shell_cmd"
commandPrefix = ["cat", "head"]
decision = "allow"
priority = 500
"""


@pytest.mark.parametrize(
    "command",
    ["cat /etc/shado?", "cat /etc/sh[a]dow", "cat /etc/sha${NOPE}dow", "head -c 99 ~/.ssh/id_rs?", "cat ~/.ssh/id_{rsa,x}"],
)
def test_a_deny_regex_that_an_expansion_could_match_asks(command: str) -> None:
    assert decide(engine(NO_SHADOW), command) is ASK


@pytest.mark.parametrize("command", ["cat /etc/passwd", "head -n 3 notes.txt"])
def test_literal_lines_the_regex_misses_are_still_allowed(command: str) -> None:
    assert decide(engine(NO_SHADOW), command) is ALLOW


@pytest.mark.parametrize("command", ["'rm' -rf build", "\\rm -rf build", 'ls; "rm" -rf build'])
def test_yolo_mode_keeps_a_deny_pattern_past_quoting(command: str) -> None:
    docs_style = """
[[rule]]
toolName = "shell_cmd"
argsPattern = '\\x00"command":"rm '
decision = "deny"
priority = 900
"""
    assert decide(engine(docs_style, mode="yolo"), command) is DENY
