"""DENY rules see what a shell line really opens and runs, and nothing else (SPEC P4).

* A DENY pattern sees redirect targets after quote removal: ``cat < ~/.a''ws/credentials``
  reads what ``cat ~/.aws/credentials`` reads.
* ``commandRegex`` is matched at the start of each command and never sees a comment, so
  gemini-cli's example ``git (status|log).*`` does not allow ``rm -rf ~ # git status``.
* A DENY rule makes a line ask only where the denied program could run (a command position,
  an argument of a wrapper or of a program that may run its arguments), never for text inside
  a quoted literal, a commit message or a grep pattern; in a sandbox, scripts and
  interpreters that name no denied program are not asked about because some DENY rule exists.
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, Tier, could_be_denied

ALLOW = PolicyDecision.ALLOW
DENY = PolicyDecision.DENY
ASK = PolicyDecision.ASK_USER
SHELL = "shell_cmd"


def engine(text: str, **options: Any) -> PolicyEngine:
    loaded = load_policy_text(text, source="policy.toml", tier=Tier.USER)
    assert loaded.errors == []
    return PolicyEngine(loaded.rules, **options)


def decide(policy: PolicyEngine, line: str) -> PolicyDecision:
    return policy.evaluate(SHELL, {"command": line}).decision


ALLOW_READERS = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["cat", "echo", "head"]
decision = "allow"
allowRedirection = true
priority = 100
"""
SECRETS_BY_PATTERN = ALLOW_READERS + r"""
[[rule]]
toolName = "shell_cmd"
argsPattern = '\.aws/credentials|\.ssh/authorized_keys'
decision = "deny"
priority = 500
"""
SECRETS_BY_REGEX = ALLOW_READERS + r"""
[[rule]]
toolName = "shell_cmd"
commandRegex = '.*(\.aws/credentials|\.ssh/authorized_keys)'
decision = "deny"
priority = 500
"""
SECRETS_BY_UNANCHORED_REGEX = ALLOW_READERS + r"""
[[rule]]
toolName = "shell_cmd"
commandRegex = '\.aws/credentials|\.ssh/authorized_keys'
decision = "deny"
priority = 500
"""


@pytest.mark.parametrize("policy", [SECRETS_BY_PATTERN, SECRETS_BY_REGEX, SECRETS_BY_UNANCHORED_REGEX])
@pytest.mark.parametrize(
    "line",
    [
        "cat ~/.aws/credentials",
        "cat ~/.a''ws/credentials",
        "cat < ~/.a''ws/credentials",
        'cat <~/.a"ws"/credentials',
        "cat < ~/.a\\ws/cred''entials",
        "{ cat; } < ~/.a''ws/credentials",
        "(head -1) < ~/.a''ws/credentials",
        "echo KEY >> ~/.s''sh/authorized_keys",
        "echo KEY >> ~/.ssh/authorized_keys",
        'echo KEY 2>"$HOME"/.s"s"h/authorized_keys',
        "echo KEY >| ~/.ssh//authorized_keys",
        "echo KEY > ~/.ssh/./authorized_keys",
        "cat x | tee -a ~/.s''sh/authorized_keys",
    ],
)
def test_a_deny_pattern_sees_redirect_targets_and_words_after_quote_removal(policy: str, line: str) -> None:
    assert decide(engine(policy), line) is DENY


def test_redirect_targets_are_seen_in_lines_only_the_fallback_parser_reads() -> None:
    # `if` is outside the strict reader's subset: every part is unknown, so it is at least
    # asked about; the redirect target a DENY pattern names makes it a denial.
    policy = engine(SECRETS_BY_REGEX)
    assert decide(policy, "if true; then cat < ~/.a''ws/credentials; fi") is DENY


@pytest.mark.parametrize("line", ["cat README.md", "echo KEY >> notes.txt", "cat < notes.txt"])
def test_redirects_elsewhere_stay_allowed(line: str) -> None:
    for policy in (SECRETS_BY_PATTERN, SECRETS_BY_REGEX):
        assert decide(engine(policy), line) is ALLOW


# --- commandRegex: anchored at each command, no comments -------------------------------------

GEMINI_GIT_EXAMPLE = """
[[rule]]
toolName = "shell_cmd"
commandRegex = 'git (status|log).*'
decision = "allow"
priority = 100
"""


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("git status", ALLOW),
        ("git log --oneline -5", ALLOW),
        ("git status && git log", ALLOW),
        ("rm -rf ~ # git status", ASK),
        ("rm -rf ~ #git status", ASK),
        ("rm -rf ~\n# git status", ASK),
        ("echo hi; git status", ASK),
        ("xgit status", ASK),
        ("echo git status", ASK),
        ("git push # git status", ASK),
        ("git status; rm -rf ~", ASK),
        ("git status $(rm -rf ~)", ASK),
        ("cat ~/.ssh/id_rsa | git status", ASK),
    ],
)
def test_an_allow_command_regex_is_anchored_at_each_command_and_never_sees_comments(
    line: str, expected: PolicyDecision
) -> None:
    assert decide(engine(GEMINI_GIT_EXAMPLE), line) is expected


def test_a_comment_never_makes_a_command_match_a_deny_regex() -> None:
    policy = engine(
        GEMINI_GIT_EXAMPLE.replace("git (status|log).*", "echo .*")
        + "[[rule]]\ntoolName = \"shell_cmd\"\ncommandRegex = 'rm .*'\ndecision = \"deny\"\npriority = 200\n"
    )
    assert decide(policy, "echo hi # rm -rf ~") is ALLOW
    assert decide(policy, "echo hi; rm -rf ~ # echo") is DENY


# --- a DENY rule asks only where the denied program could run ---------------------------------

DENY_RM_PREFIX = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["echo", "git", "grep"]
decision = "allow"
priority = 100

[[rule]]
toolName = "shell_cmd"
commandPrefix = "rm"
decision = "deny"
priority = 200
"""
DENY_RM_REGEX = DENY_RM_PREFIX.replace('commandPrefix = "rm"', "commandRegex = 'rm .*'")
DENY_RM_PATTERN = DENY_RM_PREFIX.replace('commandPrefix = "rm"', """argsPattern = '"command":"rm '""")

LITERALS = [
    'echo "rm -rf /"',
    "echo 'a && rm x'",
    "echo 'rm x; rm y'",
    'git commit -m "rm old files"',
    "git commit -m 'rm cleanup' -m 'and rm the rest'",
    'grep "rm -rf" f',
    "grep -e 'rm x' -r src",
    "echo rm",
    "git log --grep 'rm x'",
]


@pytest.mark.parametrize("policy", [DENY_RM_PREFIX, DENY_RM_REGEX, DENY_RM_PATTERN])
@pytest.mark.parametrize("line", LITERALS)
def test_a_quoted_literal_naming_a_denied_program_is_allowed_without_asking(policy: str, line: str) -> None:
    for mode in ("default", "yolo"):
        result = engine(policy, mode=mode).evaluate(SHELL, {"command": line})
        assert result.decision is ALLOW, (mode, result)


@pytest.mark.parametrize("policy", [DENY_RM_PREFIX, DENY_RM_REGEX])
@pytest.mark.parametrize(
    "line",
    [
        "echo hi && rm x",
        "echo hi; rm -rf /",
        "sudo rm x",
        "bash -c 'rm x'",
        "sh -c 'echo a && rm x'",
        "xargs rm < list",
        "find . -name '*.o' -exec rm {} +",
        "echo $(rm x)",
        "env FOO=1 rm x",
        "timeout 5 rm x",
        "/bin/rm x",
    ],
)
def test_the_denied_program_in_a_command_position_or_under_a_wrapper_is_still_denied(
    policy: str, line: str
) -> None:
    assert decide(engine(policy), line) is DENY


@pytest.mark.parametrize(
    "line",
    [
        "ssh host 'rm -rf /tmp/x'",  # a remote shell runs its argument
        "ionice -c3 rm x",  # a wrapper whose options we read: its command is a part
        "mywrapper rm x",  # a program we do not know may run its arguments
        "docker exec box rm x",
    ],
)
def test_a_program_that_may_run_its_arguments_is_not_allowed_when_they_name_a_denied_program(line: str) -> None:
    policy = engine(DENY_RM_PREFIX + '[[rule]]\ntoolName = "shell_cmd"\ndecision = "allow"\npriority = 50\n')
    result = policy.evaluate(SHELL, {"command": line})
    assert result.decision is not ALLOW, result


def test_a_denied_program_in_an_interpreter_line_asks_outside_a_sandbox() -> None:
    policy = engine(DENY_RM_PREFIX, mode="yolo")
    for line in ("python3 x.py", "bash script.sh", "node build.js", "echo rm x | sh"):
        result = policy.evaluate(SHELL, {"command": line})
        assert result.decision is ASK, line
        assert could_be_denied(result.decision, result.rule)  # no remembered approval covers it


def test_in_a_sandbox_a_script_that_names_no_denied_program_runs_in_yolo() -> None:
    policy = engine(DENY_RM_PREFIX, mode="yolo", sandboxed=True)
    for line in ("python3 x.py", "bash script.sh", "node build.js", "make test"):
        assert decide(policy, line) is ALLOW, line


@pytest.mark.parametrize("policy", [DENY_RM_PREFIX, DENY_RM_REGEX])
def test_in_a_sandbox_a_script_whose_line_names_the_denied_program_still_asks(policy: str) -> None:
    sandboxed = engine(policy, mode="yolo", sandboxed=True)
    for line in ("echo rm -rf x | sh", "python3 -c 'import os; os.system(\"rm -rf x\")'"):
        assert decide(sandboxed, line) in (ASK, DENY), line


def test_unknown_programs_still_ask_under_any_deny_rule_in_a_sandbox() -> None:
    policy = engine(DENY_RM_PREFIX, mode="yolo", sandboxed=True)
    for line in ("$CMD x", "eval \"$X\"", "if true; then ls; fi"):
        assert decide(policy, line) is ASK, line


# --- properties ---------------------------------------------------------------------------------

_TEXT = st.text(alphabet=st.sampled_from(list("rmx -/;&|'\"$`()<>ab\\")), max_size=24)


@given(_TEXT, st.sampled_from(["echo", "git commit -m", "grep -e", "echo -n x"]))
def test_a_single_quoted_argument_of_a_data_program_is_never_a_reason_to_deny_or_ask(
    text: str, program: str
) -> None:
    line = f"{program} {shlex.quote(text)}"
    for policy in (DENY_RM_PREFIX, DENY_RM_REGEX):
        assert decide(engine(policy), line) is ALLOW, (policy, line)


@given(st.sampled_from(["rm x", "rm -rf /", "rm"]), st.sampled_from(["&&", ";", "||", "|", "\n"]))
def test_a_denied_command_after_any_operator_is_denied(command: str, operator: str) -> None:
    assert decide(engine(DENY_RM_PREFIX), f"echo 'a {operator} b' {operator} {command}") is DENY


@pytest.mark.parametrize("line", ["echo hi && rm x", "sudo rm x", "bash -c 'rm x'", "xargs rm -f < list", "echo $(rm x)"])
def test_an_args_pattern_for_a_command_start_denies_it_in_every_part(line: str) -> None:
    assert decide(engine(DENY_RM_PATTERN), line) is DENY


def test_a_session_approval_of_echo_covers_a_quoted_literal_naming_a_denied_program() -> None:
    from agentworld.approval.grants import Grant
    from agentworld.runtime.authorizer import decide_call

    deny_rm = engine('[[rule]]\ntoolName = "shell_cmd"\ncommandPrefix = "rm"\ndecision = "deny"\npriority = 200\n')
    grant = Grant("g1", "w", "session", SHELL, agent="a1", chat_id="c1", roots=frozenset({"echo"}))
    literal = decide_call(deny_rm, SHELL, {"command": 'echo "rm -rf /"'}, grants=[grant], agent="a1", chat_id="c1")
    assert (literal.decision, literal.by) == (ALLOW, "session approval")
    chained = decide_call(deny_rm, SHELL, {"command": "echo hi && rm x"}, grants=[grant], agent="a1", chat_id="c1")
    assert chained.decision is DENY


@st.composite
def _quote_split(draw: st.DrawFn, path: str) -> str:
    """``path`` with empty quotes and backslashes put between its characters at random."""
    out = []
    for ch in path:
        if ch != "~" and draw(st.booleans()):
            out.append(draw(st.sampled_from(["''", '""', "\\"])) if ch.isalnum() else "''")
        out.append(ch)
    return "".join(out)


@given(
    _quote_split("~/.aws/credentials"),
    st.sampled_from(["<", ">", ">>", "2>", "&>", ">|", "<>"]),
    st.sampled_from(["cat", "echo KEY", "head -1"]),
)
def test_a_redirect_target_split_by_quotes_is_still_denied(target: str, operator: str, command: str) -> None:
    line = f"{command} {operator} {target}"
    for policy in (SECRETS_BY_PATTERN, SECRETS_BY_REGEX, SECRETS_BY_UNANCHORED_REGEX):
        assert decide(engine(policy), line) is DENY, (policy, line)


def test_a_path_regex_still_denies_a_quoted_path_that_holds_a_blank() -> None:
    policy = engine(SECRETS_BY_UNANCHORED_REGEX)
    assert decide(policy, 'cat "/tmp/a b/../../home/u/.aws/credentials"') is DENY
    assert decide(policy, "head -1 '/x y/.ssh/authorized_keys'") is DENY


def test_an_allow_args_pattern_never_sees_a_comment() -> None:
    policy = engine("[[rule]]\ntoolName = \"shell_cmd\"\nargsPattern = 'git status'\ndecision = \"allow\"\npriority = 100\n")
    assert decide(policy, "git status") is ALLOW
    assert decide(policy, "rm -rf ~ # git status") is ASK
    assert decide(policy, "rm -rf ~ #git status") is ASK


@pytest.mark.parametrize(
    "line", ["cat < /etc/shadow", "cat </etc/sha''dow", "(cat) < /etc/shadow", "cat /etc/shadow", "cat 0</etc/shadow"]
)
def test_a_deny_prefix_naming_a_file_sees_it_as_a_redirect_target(line: str) -> None:
    policy = engine(ALLOW_READERS + '[[rule]]\ntoolName = "shell_cmd"\ncommandPrefix = "cat /etc/shadow"\ndecision = "deny"\npriority = 500\n')
    assert decide(policy, line) is DENY
    assert decide(policy, "cat < /etc/hostname") is ALLOW
