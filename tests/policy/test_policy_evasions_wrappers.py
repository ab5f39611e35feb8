"""Wrappers, abbreviated options and builtins that hide what a line runs (SPEC P1, P4; "a tool
call is ALLOWed only when we fully understand what it will do").

The policy allows harmless programs, wrappers among them, and denies ``touch``/``rm`` at a
higher priority. Each line below would run ``touch`` or write outside the work directory, so
it is asked about:

* xargs handing its input to a wrapper (``xargs env``, ``xargs xargs``);
* a wrapper option abbreviated (``env --unse ls …``) or an option of a program abbreviated
  (``sed --expr='1e …'``, ``sort --out=…``);
* a builtin setting ``BASH_CMDS``, ``PATH`` or ``HOME`` (``read``, ``printf -v``);
* ``cd /etc && cat shadow`` and ``cat /etc//shadow`` under a DENY path pattern;
* files written or the system changed through options (``git reflog --output``, ``date -s``);
* ``sudo -s CMD``.
"""

from __future__ import annotations

import pytest

from agentworld.approval.display import shell_view
from agentworld.approval.grants import find_covering_grant, grant_for
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, Tier

ALLOW = PolicyDecision.ALLOW
DENY = PolicyDecision.DENY
ASK = PolicyDecision.ASK_USER

_PROGRAMS = (
    "echo ls cat find awk env grep head wc printf date true test cd pwd sort tr cut sed diff "
    "xargs basename dirname file stat tail command timeout nice time stdbuf nohup sudo "
    "setsid flock ionice chrt taskset read tar curl man zip shuf sdiff hostname git"
)
PROGRAMS_POLICY = f"""
[[rule]]
toolName = "shell_cmd"
commandPrefix = {list(_PROGRAMS.split())!r}
decision = "allow"
priority = 100

[[rule]]
toolName = "shell_cmd"
commandPrefix = ["touch", "rm"]
decision = "deny"
priority = 200
"""
ECHO_AND_XARGS_ONLY = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["echo", "xargs"]
decision = "allow"
priority = 100
"""
DENY_PATHS = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["echo", "cat", "cd", "ls", "head", "pushd", "popd", "env", "git status"]
decision = "allow"
priority = 100

[[rule]]
name = "no secrets"
toolName = "*"
argsPattern = '\\.ssh/|\\.aws/|/etc/shadow'
decision = "deny"
priority = 900
"""


def engine(text: str) -> PolicyEngine:
    loaded = load_policy_text(text, source="policy.toml", tier=Tier.USER)
    assert loaded.errors == []
    return PolicyEngine(loaded.rules)


def decide(policy: str, command: str) -> PolicyDecision:
    return engine(policy).evaluate("shell_cmd", {"command": command}).decision


@pytest.mark.parametrize(
    "command",
    [
        # 1. xargs feeding a wrapper
        "printf '\\x74ouch P' | xargs xargs",
        "printf '\\x74ouch P' | xargs env",
        "xargs -a cmds.txt env",
        "printf '\\x74ouch P' | xargs timeout 5",
        "printf '\\x74ouch P' | xargs nice",
        "printf '\\x74ouch P' | xargs command",
        "printf '\\x74ouch P' | xargs time",
        "printf '\\x74ouch P' | xargs stdbuf -oL",
        "printf '\\x74ouch P' | xargs sudo",
        "printf '\\x74ouch P' | xargs setsid",
        "printf '\\x74ouch P' | xargs nohup",
        "printf '. -exec \\x74ouch P ;' | xargs find",
        # 2. wrapper options abbreviated
        "env --unse ls /usr/bin/to?ch P",
        "env --unse ls rm -rf ~/important",
        "echo P | xargs --process ls /usr/bin/to?ch",
        "env --split='t${x}ouch P'",
        "env --ch /tmp /usr/bin/to?ch P",
        "xargs --arg FILE /usr/bin/to?ch",
        "timeout --sig KILL 5 /usr/bin/to?ch P",
        "nice --adj 5 /usr/bin/to?ch P",
        # 3. builtins setting what later commands run
        "read 'BASH_CMDS[ls]' <<< /usr/bin/touch; ls P",
        "printf -v 'BASH_CMDS[ls]' /usr/bin/touch; ls P",
        "printf -vPATH . ; ls",
        "printf -v HOME . ; git status",
        # 4. program options abbreviated
        "echo x | sed --expr='1e /usr/bin/to?ch P' -e p",
        "sed --e='1e /usr/bin/to?ch P' f",
        "tar --to-com='/usr/bin/to?ch P' -xf a.tar",
        "git grep --open-files='/usr/bin/to?ch P;' hello",
        "sed --fil=x.sed f",
        "sort --compress-prog=sh f",
        "tar --use-comp=sh -xf a.tar",
        "tar --checkpoint-act=exec=sh -cf a.tar d",
        "zip -T --unzip-c=sh a.zip f",
        "curl --conf FILE",
        # 7. system changes
        "date -s 2020-01-01",
        "date --set=2020-01-01",
        "hostname evil",
        # 10. sudo through a shell
        "sudo -s /usr/bin/to?ch P",
        "sudo -i ls",
        "sudo --shell ls",
        "sudo --login ls",
    ],
)
def test_what_runs_unreadably_is_asked_about_never_allowed(command: str) -> None:
    assert decide(PROGRAMS_POLICY, command) is ASK


@pytest.mark.parametrize(
    "command",
    [
        "echo hi | sort --out=../OUTSIDE",
        "sed --in-pl s/a/b/ f",
        "curl --remote-name-a http://x",
        "git reflog --output=../OUTSIDE",
        "git shortlog --output=../OUTSIDE",
        "git stash list --output=../OUTSIDE",
        "git stash show --output=../OUTSIDE",
        "git archive -o ../OUTSIDE HEAD",
        "git archive --output=../OUTSIDE HEAD",
        "shuf -o ../OUTSIDE f",
        "sdiff -o ../OUTSIDE a b",
    ],
)
def test_files_written_through_options_are_asked_about(command: str) -> None:
    result = engine(PROGRAMS_POLICY).evaluate("shell_cmd", {"command": command})
    assert result.decision is ASK
    assert "writes one" in result.reason or "redirects output" in result.reason


@pytest.mark.parametrize(
    "command",
    [
        "echo rm -rf / | xargs xargs",
        "echo touch P | xargs xargs",
        "echo touch P | xargs -e touch",
        "echo touch P | xargs -l touch",
    ],
)
def test_xargs_feeding_xargs_is_not_allowed_by_a_rule_for_echo_and_xargs(command: str) -> None:
    assert decide(ECHO_AND_XARGS_ONLY, command) is ASK


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "git status",
        "sed -n 1,5p file",
        "sort file",
        "cd sub && ls",
        "cd sub && cat x",
        "echo hello | xargs echo",
        "find . -name '*.py' | xargs wc -l",
        "env ls -la",
        "env --unset=X ls",
        "timeout 5 ls",
        "nice -n 5 ls",
        "sudo -u root ls",
        "read line <<< x",
        "printf -v out '%s' x",
        "date +%s",
        "hostname",
        "tar --checkpoint=10 -tf a.tar",
        "git reflog",
    ],
)
def test_ordinary_lines_are_still_allowed(command: str) -> None:
    assert decide(PROGRAMS_POLICY, command) is ALLOW


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cd ~/.ssh && cat id_rsa", ASK),
        ("cd /home/me/.ssh && cat id_rsa", ASK),
        ("cd /etc && cat shadow", ASK),
        ("pushd /etc; cat shadow", ASK),
        ("cd /etc && cat < shadow", ASK),
        ("env -C /etc cat shadow", ASK),
        ("env --chdir=/etc cat shadow", ASK),
        ("cat /etc//shadow", DENY),
        ("cat /etc/./shadow", DENY),
        ("cat /etc/ssl/../shadow", DENY),
        ("cat /home/me/.ssh//id_rsa", DENY),
        ("cat /home/me/.ssh/./id_rsa", DENY),
        # no directory change, or no relative path: decided as written
        ("cat /etc/passwd", ALLOW),
        ("cd /etc && cat /etc/passwd", ALLOW),
        ("cd sub && ls", ALLOW),
        ("cd sub && ls -la", ALLOW),
        ("cat shadow; cd /etc", ALLOW),
        # the price: after a `cd`, a DENY path pattern cannot tell `status` from a file name
        ("cd sub && git status", ASK),
    ],
)
def test_a_deny_path_pattern_sees_through_cd_and_odd_spellings(
    command: str, expected: PolicyDecision
) -> None:
    assert decide(DENY_PATHS, command) is expected


def test_a_deny_command_regex_sees_plainly_spelled_paths() -> None:
    policy = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["cat"]
decision = "allow"
priority = 100

[[rule]]
toolName = "shell_cmd"
commandRegex = '/etc/shadow'
decision = "deny"
priority = 900
"""
    assert decide(policy, "cat /etc//shadow") is DENY
    assert decide(policy, "cat /etc/passwd") is ALLOW


def test_a_session_grant_for_xargs_echo_does_not_cover_xargs_xargs() -> None:
    grant = grant_for(
        "session", world="w", tool_name="shell_cmd", arguments={"command": "echo hello | xargs echo"},
        agent="Alice", chat_id="c1", approval_id="a1",
    )
    assert grant is not None
    for command in ("echo touch ../PWNED | xargs xargs", "printf '\\x74ouch P' | xargs env", "xargs -a f env"):
        covering = find_covering_grant(
            [grant], "shell_cmd", {"command": command}, agent="Alice", chat_id="c1"
        )
        assert covering is None, command


def test_the_approval_view_does_not_claim_an_abbreviated_option_runs_the_next_word() -> None:
    view = shell_view({"command": "env --unse ls rm -rf ~/important"}, working_dir="/w")
    assert view.commands == ("env --unse ls rm -rf ~/important",)
    assert not any(c.startswith("ls ") for c in view.commands)


@pytest.mark.parametrize(
    ("approved", "later"),
    [
        ("cd sub && cat x", "cd /etc && cat shadow"),
        ("cat /etc/host?", "cat /etc/shado?"),
    ],
)
def test_a_session_approval_never_covers_a_line_a_deny_rule_could_match(approved: str, later: str) -> None:
    """The person approved a line they saw; a later line of the same shape that a DENY rule
    could match (what it opens is only known when it runs) is asked about again, and denied
    when nobody can be asked — never run on the strength of that approval."""
    from agentworld.runtime.authorizer import decide_call

    policy = engine(DENY_PATHS)
    grant = grant_for(
        "session", world="w", tool_name="shell_cmd", arguments={"command": approved},
        agent="Alice", chat_id="c1", approval_id="a1",
    )  # fmt: skip
    assert grant is not None
    assert find_covering_grant([grant], "shell_cmd", {"command": later}, agent="Alice", chat_id="c1")

    def verdict(interactive: bool) -> PolicyDecision:
        return decide_call(
            policy, "shell_cmd", {"command": later}, grants=[grant], agent="Alice", chat_id="c1",
            interactive=interactive,
        ).decision  # fmt: skip

    assert verdict(interactive=True) is ASK
    assert verdict(interactive=False) is DENY
