"""gemini-cli's own shell policy test cases, translated to our rules.

Taken from google-gemini/gemini-cli ``packages/core/src/policy/``: ``shell-safety.test.ts``,
``shell-safety-regression.test.ts``, ``shell-substitution.test.ts`` and the shell cases of
``policy-engine.test.ts``. Their ``buildArgsPatterns(undefined, PREFIX)`` is our
``commandPrefix = PREFIX``; a raw ``argsPattern`` (``"command":"rm``) stays an ``argsPattern``
(our stable stringify spells the ``command`` pair the same way); their ``commandRegex`` becomes
``"command":"REGEX`` (anchored at the command's start), which is what ours means too. The
default decision is theirs (ASK_USER unless a case says ALLOW).

Every case expects what they expect, except where we are deliberately stricter, marked
``STRICTER`` with the reason: nothing they mean to stop is allowed by us.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, Tier

ALLOW, DENY, ASK = PolicyDecision.ALLOW, PolicyDecision.DENY, PolicyDecision.ASK_USER


def prefix(decision: str, *prefixes: str, priority: int = 10, redirection: bool = False, name: str = "") -> str:
    listed = ", ".join(f"'{p}'" for p in prefixes)
    text = f'[[rule]]\ntoolName = "shell_cmd"\ncommandPrefix = [{listed}]\ndecision = "{decision}"\npriority = {priority}\n'
    text += "allowRedirection = true\n" if redirection else ""
    return text + (f'name = "{name}"\n' if name else "")


def pattern(decision: str, regex: str, *, priority: int = 20) -> str:
    return f"[[rule]]\ntoolName = \"shell_cmd\"\nargsPattern = '{regex}'\ndecision = \"{decision}\"\npriority = {priority}\n"


def regex(decision: str, text: str, *, priority: int = 20) -> str:
    return f"[[rule]]\ntoolName = \"shell_cmd\"\ncommandRegex = '{text}'\ndecision = \"{decision}\"\npriority = {priority}\n"


CATCH_ALL_ASK = '[[rule]]\ntoolName = "shell_cmd"\ndecision = "ask_user"\npriority = 10\n'


@dataclass(frozen=True)
class Case:
    source: str
    rules: str
    command: str
    expected: PolicyDecision
    default: PolicyDecision = ASK
    rule_name: str | None = "-"
    """The name of the rule they blame (None: the default decision); ``-``: not checked."""
    stricter: str = ""
    """Why we decide more strictly than they do, when we do (``expected`` is then ours)."""


GIT_LOG = prefix("allow", "git log")
ECHO_AND_GIT = prefix("allow", "echo") + prefix("allow", "git")

CASES = [
    # shell-safety.test.ts: an ALLOW prefix "git log"
    Case("safety: exact", GIT_LOG, "git log", ALLOW),
    Case("safety: with arguments", GIT_LOG, "git log --oneline", ALLOW),
    Case("safety: word boundary", GIT_LOG, "git logout", ASK),
    Case("safety: &&", GIT_LOG, "git log && rm -rf /", ASK),
    Case("safety: ;", GIT_LOG, "git log; rm -rf /", ASK),
    Case("safety: ||", GIT_LOG, "git log || rm -rf /", ASK),
    Case("safety: parse failure", GIT_LOG, "git log &&& rm -rf /", ASK),
    Case("safety: $() under echo", prefix("allow", "echo"), "echo $(rm -rf /)", ASK),
    Case("safety: $() both allowed", ECHO_AND_GIT, "echo $(git log)", ALLOW),
    Case("safety: backticks", GIT_LOG, "echo `rm -rf /`", ASK),
    Case("safety: <() process substitution", GIT_LOG, "diff <(git log) <(rm -rf /)", ASK),
    Case("safety: >() process substitution", GIT_LOG, "tee >(rm -rf /)", ASK),
    Case("safety: pipe", GIT_LOG, "git log | rm -rf /", ASK),
    Case("safety: --arg=$()", GIT_LOG, "git log --format=$(rm -rf /)", ASK),
    Case("safety: nested", GIT_LOG, "git log && echo $(git log | rm -rf /)", ASK),
    Case("safety: nested, all allowed", ECHO_AND_GIT, "git log && echo $(git log)", ALLOW),
    Case("safety: redirection", GIT_LOG, "git log > /tmp/test", ASK),
    Case("safety: allowRedirection", prefix("allow", "git log", redirection=True), "git log > /tmp/test", ALLOW),
    Case("safety: PowerShell @()", GIT_LOG, "git log @(Get-Process)", ASK),
    Case("safety: DENY after unknown", prefix("deny", "git push"), 'git commit -m "msg" && git push', DENY),
    Case(
        "safety: blame the default ASK",
        prefix("allow", "git status", name="allow_git_status_rule"),
        "git status && unknown_command", ASK, rule_name=None,
    ),
    Case(
        "safety: first ASK is the default's",
        prefix("ask_user", "another_unknown_command", name="ask_another"),
        "unknown_command_1 && another_unknown_command", ASK, rule_name=None,
    ),
    Case(
        "safety: first explicit ASK is blamed",
        prefix("ask_user", "known_ask_command_1", name="ask_rule_1")
        + prefix("ask_user", "known_ask_command_2", name="ask_rule_2"),
        "known_ask_command_1 && known_ask_command_2", ASK, default=ALLOW, rule_name="ask_rule_1",
    ),
    # shell-safety-regression.test.ts: ALLOW prefixes
    Case("regression: && one unknown", prefix("allow", "echo"), "echo hi && ls", ASK),
    Case("regression: && both allowed", prefix("allow", "echo", "ls"), "echo hi && ls", ALLOW),
    Case("regression: ||", prefix("allow", "false"), "false || ls", ASK),
    Case("regression: ;", prefix("allow", "echo"), "echo hi; ls", ASK),
    Case("regression: pipe one unknown", prefix("allow", "echo"), 'echo hi | grep "hi"', ASK),
    Case("regression: pipe both allowed", prefix("allow", "echo", "grep"), 'echo hi | grep "hi"', ALLOW),
    Case("regression: & one unknown", prefix("allow", "echo"), "echo hi & ls", ASK),
    Case("regression: & both allowed", prefix("allow", "echo", "ls"), "echo hi & ls", ALLOW),
    Case("regression: nested $() one unknown", prefix("allow", "echo", "cat"), "echo $(cat $(ls))", ASK),
    Case("regression: nested $() all allowed", prefix("allow", "echo", "cat", "ls"), "echo $(cat $(ls))", ALLOW),
    Case("regression: redirection", prefix("allow", "echo"), "echo hi > /tmp/test", ASK),
    # shell-substitution.test.ts: default ALLOW, DENY argsPattern "command":"CMD"
    Case("substitution: $()", pattern("deny", '"command":"dangerous_cmd"'), "echo $(dangerous_cmd)", DENY, default=ALLOW),
    Case("substitution: backticks", pattern("deny", '"command":"dangerous_cmd"'), "echo `dangerous_cmd`", DENY, default=ALLOW),
    Case("substitution: subshell", pattern("deny", '"command":"dangerous_cmd"'), "(dangerous_cmd)", DENY, default=ALLOW),
    Case("substitution: nested", pattern("deny", '"command":"deep_danger"'), "echo $(ls $(deep_danger))", DENY, default=ALLOW),
    # policy-engine.test.ts: raw argsPattern rules over shell commands
    Case(
        "engine: both parts allowed beat a catch-all ASK",
        pattern("allow", '"command":"git status') + pattern("allow", '"command":"ls') + CATCH_ALL_ASK,
        "git status && ls", ALLOW,
    ),
    Case(
        "engine: a DENY for the whole compound line",
        pattern("deny", '"command":"git status && ls"', priority=30)
        + pattern("allow", '"command":"git status') + pattern("allow", '"command":"ls'),
        "git status && ls", DENY,
    ),
    Case(
        "engine: DENY from any sub-command",
        pattern("deny", '"command":"rm') + pattern("allow", '"command":"echo') + CATCH_ALL_ASK,
        "echo hello && rm -rf /", DENY,
    ),
    Case("engine: redirect asks", pattern("allow", '"command":"echo'), 'echo "hello" > file.txt', ASK),
    Case("engine: quoted arrow is no redirect", pattern("allow", '"command":"echo'), 'echo "-> arrow"', ALLOW),
    Case("engine: explicit DENY for git status", pattern("deny", '"command":"git status"', priority=100), "git status", DENY),
    Case(
        "engine: git in an argument is not git",
        pattern("allow", '"command":"echo'), "echo git", ALLOW,
    ),
    Case(
        "engine: an assignment before git",
        prefix("allow", "git"), "VAR=val git status", ASK,
        stricter="they ask only in an untrusted folder; we always ask about an environment assignment",
    ),
    Case(
        "engine: mkdir and a redirect in one line",
        prefix("allow", "mkdir", "echo"), 'mkdir -p "bar" && echo "hello" > bar/test.md', ASK,
    ),
    Case("engine: $(ls) under echo only", prefix("allow", "echo"), "echo $(ls)", ASK),
    Case("engine: two echos", prefix("allow", "echo"), "echo hello && echo world", ALLOW),
    # docs/reference/policy-engine.md: commandRegex examples
    Case("docs: regex allows its command", regex("allow", "git (status|log).*"), "git status --short", ALLOW),
    Case(
        "docs: regex never sees a comment",
        regex("allow", "git (status|log).*"), "rm -rf ~ # git status", ASK,
    ),
    Case("docs: regex is anchored", regex("allow", "git (status|log).*"), "xgit status", ASK),
    Case("docs: regex per command", regex("allow", "git (status|log).*"), "echo hi; git status", ASK),
]


@pytest.mark.parametrize("case", CASES, ids=[c.source for c in CASES])
def test_gemini_cli_shell_case(case: Case) -> None:
    loaded = load_policy_text(case.rules, source="gemini.toml", tier=Tier.USER)
    assert loaded.errors == []
    result = PolicyEngine(loaded.rules, default=case.default).evaluate("shell_cmd", {"command": case.command})
    assert result.decision is case.expected, result
    if case.rule_name != "-":
        assert (result.rule.name if result.rule is not None else None) == case.rule_name
