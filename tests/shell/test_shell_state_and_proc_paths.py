"""Shell state that runs a command no word of the line shows, and paths under ``/proc`` (SPEC
P4: a tool call is ALLOWed only when we fully understand what it will do).

Under rules that allow only the builtins and programs they use, each of these would run a
hidden command or read a secret:

* arithmetic evaluation of a variable's *value*: ``echo 'a[$(cmd)]' >/dev/null; test -v
  'b[_]'`` (``$_`` is the last argument of the previous command, and the subscript ``_`` is
  evaluated, value and all), ``let _``, ``declare -i n; read n <<< 'a[$(cmd)]'``;
* namerefs: ``declare -n r; printf -v r 'BASH_CMDS[ls]'; printf -v r /bin/sh; ls -c 'cmd'``;
* ``set -k``: every later ``NAME=value`` argument becomes an environment assignment
  (``git status GIT_CONFIG_KEY_0=core.fsmonitor …``);
* git run in a directory the line (or the call's ``directory``) moved to, whose
  repository configuration nobody saw (``core.fsmonitor``);
* reading ``/proc/<pid>/environ`` under a world rule that allows ``grep``.

Each is ``unknown`` (only a rule for every shell call may allow it), and the ordinary lines
next to them are still allowed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentworld.approval.grants import grant_for, shell_shape
from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, Tier
from agentworld.shell.commands import analyze

ALLOW = PolicyDecision.ALLOW
ASK = PolicyDecision.ASK_USER
DENY = PolicyDecision.DENY


def engine(*prefixes: str) -> PolicyEngine:
    text = f"""
[[rule]]
toolName = "shell_cmd"
commandPrefix = {list(prefixes)!r}
decision = "allow"
priority = 100
"""
    loaded = load_policy_text(text.replace("'", '"'), source="policy.toml", tier=Tier.USER)
    assert loaded.errors == []
    return PolicyEngine(loaded.rules)


def decide(
    prefixes: tuple[str, ...], arguments: dict[str, Any], *, strict: bool = False
) -> PolicyDecision:
    return engine(*prefixes).evaluate("shell_cmd", arguments, non_interactive=strict).decision


def _refused(prefixes: tuple[str, ...], line: str) -> None:
    assert decide(prefixes, {"command": line}) is ASK
    assert decide(prefixes, {"command": line}, strict=True) is DENY
    assert shell_shape({"command": line}) is None  # no remembered approval covers it


# -- 1. arithmetic evaluation of a value nobody saw ------------------------------------------

ARITHMETIC = [
    (("echo", "test"), "echo 'a[$(id > /tmp/P)]' >/dev/null; test -v 'b[_]'"),
    (("echo", "["), "echo 'a[$(id > /tmp/P)]' >/dev/null; [ -v 'b[_]' ]"),
    (("echo", "test"), "echo 'a[$(id > /tmp/P)]' >/dev/null; test ! -v 'b[_]'"),
    (("echo", "test"), "echo 'a[$(id > /tmp/P)]' >/dev/null; test -R 'b[_]'"),
    (("echo", "let"), "echo 'a[$(cmd)]' >/dev/null; let _"),
    (("echo", "let"), "echo 'a[$(cmd)]' >/dev/null; let 'x = _ + 1'"),
    (("read", "let"), "read x <<< 'a[$(cmd)]'; let x"),
    (("read", "let"), "read count <<< 'a[$(cmd)]'; let 'count += 1'"),
    (("printf", "let"), "printf -v x 'a[\\x24(cmd)]'; let y=x"),
    (("getopts", "let"), "getopts x: o -x 'a[$(cmd)]'; let OPTARG"),
    (("let",), "let 'b[1]'"),
    (("read", "test"), "read x <<< 'a[$(cmd)]'; test -v 'b[x]'"),
    (("read", "test"), "read <<< 'a[$(cmd)]'; test -v 'b[REPLY]'"),
    (("printf", "test"), "printf -v x 'a[\\x24(cmd)]'; test -v 'b[x]'"),
    (("declare", "read"), "declare -i n; read n <<< 'a[$(cmd)]'"),
    (("typeset", "read"), "typeset -i n; read n <<< 'a[$(cmd)]'"),
    (("local", "read"), "local -i n; read n <<< 'a[$(cmd)]'"),
    (("declare", "printf"), "declare -gi n; printf -v n 'a[\\x24(cmd)]'"),
    (("export", "read"), "export -i n; read n <<< 'a[$(cmd)]'"),
    (("readonly", "read"), "readonly -i n; read n <<< 'a[$(cmd)]'"),
]


@pytest.mark.parametrize(("prefixes", "line"), ARITHMETIC)
def test_arithmetic_on_a_value_nobody_saw_is_not_allowed(
    prefixes: tuple[str, ...], line: str
) -> None:
    _refused(prefixes, line)


@pytest.mark.parametrize(
    "line",
    [
        "x='a[$(cmd)]'; echo $((x))",
        "echo $((x))",
        "echo $[x]",
        "((x))",
        "echo ${x:y}",
        "echo ${x:1:2}",
        "echo ${a[x]}",
        "echo ${a[_]}",
        "echo ${a[0]}",
        "[[ x -eq 1 ]]",
        "[[ -v 'b[_]' ]]",
    ],
)
def test_arithmetic_expansions_and_commands_are_not_read_at_all(line: str) -> None:
    """The strict reader refuses these forms (``${x:1:2}`` and ``${a[0]}`` too: it reads no
    ``${..}`` form but ``${NAME}``), so they stay unknown whatever the rule."""
    analysis = analyze(line)
    assert not analysis.understood
    assert decide(("echo", "x", "[["), {"command": line}) is ASK


# -- 2. namerefs -----------------------------------------------------------------------------

NAMEREFS = [
    (
        ("declare", "printf", "ls"),
        "declare -n r; printf -v r 'BASH_CMDS[ls]'; printf -v r /bin/sh; ls -c 'id > /tmp/P'",
    ),
    (
        ("declare", "read", "ls"),
        "declare -n r; read r <<< 'BASH_CMDS[ls]'; read r <<< /bin/sh; ls -c 'id'",
    ),
    (("declare", "read"), "declare -n r; read r <<< PATH"),
    (("typeset", "printf", "ls"), "typeset -n r; printf -v r 'BASH_CMDS[ls]'"),
    (("local", "printf"), "local -n r; printf -v r x"),
    (("declare", "printf"), "declare -gn r; printf -v r x"),
    (("declare", "printf"), "declare -rn r; printf -v r x"),
    (("declare", "printf"), "declare -nr r; printf -v r x"),
    (("declare",), "declare +n r"),
    (("export",), "export -n PATH"),
]


@pytest.mark.parametrize(("prefixes", "line"), NAMEREFS)
def test_a_nameref_is_not_allowed(prefixes: tuple[str, ...], line: str) -> None:
    _refused(prefixes, line)
    assert analyze(line).parts[0].opacity == "unknown"


# -- 3. set and shopt options that change how later commands are read ------------------------

SET_LINES = [
    "set -euk; git status GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='id > /tmp/P; false'",
    "set -k; git status",
    "set -o keyword; git status",
    "set -eo keyword; git status",
    "set -a; git status",
    "set -o allexport; git status",
    "set -H; git status",
    "set -o history; git status",
    "set -T; git status",
    "set -E; git status",
    "set -P; git status",
    "set -o posix; git status",
    "set -o functrace; git status",
    "set -o vi; git status",
    "set -o -k; git status",
    "set $opts; git status",
    'set "-$o"; git status',
    "shopt -s expand_aliases; git status",
    "shopt -s extdebug; git status",
    "shopt -s sourcepath; git status",
    "shopt -s nullglob expand_aliases; git status",
    "shopt -os keyword; git status",
    "shopt -s $x; git status",
]


@pytest.mark.parametrize("line", SET_LINES)
def test_an_option_that_changes_how_later_commands_are_read_is_not_allowed(line: str) -> None:
    _refused(("set", "shopt", "git status"), line)
    assert analyze(line).parts[0].opacity == "unknown"


# -- 4. git in a repository the line moved to ------------------------------------------------

GIT_POLICY = ("git status", "git diff", "cd", "pushd", "env", "find", "ls")


@pytest.mark.parametrize(
    "arguments",
    [
        {"command": "cd vendor/lib && git status"},
        {"command": "cd vendor/lib; git diff"},
        {"command": "pushd vendor/lib; git status"},
        {"command": "cd /tmp && git status"},
        {"command": "cd vendor/lib && ls && git status"},
        {"command": "env -C vendor/lib git status"},
        {"command": "find vendor -name HEAD -execdir git status \\;"},
        {"command": "git status", "directory": "vendor/lib"},
        {"command": "git diff", "directory": "/tmp/x"},
        {"command": "ls && git status", "directory": "vendor/lib"},
    ],
)
def test_git_in_a_directory_the_line_moved_to_is_not_allowed(arguments: dict[str, Any]) -> None:
    assert decide(GIT_POLICY, arguments) is ASK
    assert decide(GIT_POLICY, arguments, strict=True) is DENY


def test_git_after_a_cd_has_no_grant_key() -> None:
    analysis = analyze("cd vendor/lib && git status")
    assert [p.opacity for p in analysis.parts] == ["clear", "unknown"]
    assert analysis.keys is None


# -- 5. /proc ---------------------------------------------------------------------------------

PROC_LINES = [
    'grep -aho "OPENAI_API_KEY=[^[:cntrl:]]*" /proc/[0-9]*/environ | rev',
    "grep -a KEY /proc/*/environ",
    "cat /proc/self/environ",
    "cat /proc/thread-self/environ",
    "cat /proc/1/environ",
    "cat /proc/$$/environ",
    "cat /proc/$PPID/environ",
    "cat /proc/$PPID/cmdline",
    "cat //proc//self/environ",
    "cat /./proc/./self/environ",
    "cat /usr/../proc/self/environ",
    "cat /proc/cpuinfo/../self/environ",
    "cat '/pr''oc/self/environ'",
    "cat /pr?c/self/environ",
    "cat /p*/self/environ",
    "cat /[p]roc/self/environ",
    "cat /*/self/environ",
    "cat /{proc,x}/self/environ",
    "cat {/proc,x}/self/environ",
    "cat /$d/self/environ",
    "cat ../../../../../../proc/self/environ",
    "cat ~/../../proc/self/environ",
    "cat proc/self/environ",
    "cat /dev/fd/../environ",
    "cat /dev/fd/../../1/environ",
    "cat < /proc/1/environ",
    "cat 0</proc/1/environ",
    "{ cat; } < /proc/1/environ",
    "grep --file=/proc/1/environ x",
    "grep -f/proc/1/environ x",
    "curl file:///proc/self/environ",
    "sed 'r /proc/1/environ' README.md",
    "read x < /proc/1/environ",
    "ls /proc",
    "ls /proc/",
    "cd /proc",
    "cd /proc/1 && cat environ",
    "cd / && cat proc/1/environ",
    "cd / && cd proc",
    "cd / && cat proc",
    "grep -r OPENAI_API_KEY /",
    "grep -r OPENAI_API_KEY //",
    "rg OPENAI_API_KEY /",
    "grep -r KEY ../../..",
    "grep -r KEY ~/../..",
    "find / -name environ",
    "find ../.. -name environ",
    "cd / && grep -r KEY",
    "cd / && grep -r KEY .",
    "cd .. && cd .. && rg KEY",
    "env -C / grep -r KEY",
    "tar -C / -cf - proc",
    "find / -maxdepth 3 -path '/p*/self/environ'",
]
PROC_POLICY = ("grep", "rev", "cat", "ls", "cd", "rg", "find", "curl", "sed", "env", "read", "tar")


@pytest.mark.parametrize("line", PROC_LINES)
def test_a_path_under_proc_is_not_allowed_by_a_rule_for_the_program(line: str) -> None:
    assert decide(PROC_POLICY, {"command": line}) is not ALLOW
    assert decide(PROC_POLICY, {"command": line}, strict=True) is DENY


@pytest.mark.parametrize("directory", ["/proc", "/proc/self", "//proc/1/"])
def test_a_shell_call_run_in_proc_is_not_allowed(directory: str) -> None:
    assert decide(PROC_POLICY, {"command": "cat environ", "directory": directory}) is ASK


@pytest.mark.parametrize(
    ("line", "directory"),
    [
        ("cat proc/1/environ", "/"),
        ("grep -r KEY", "/"),
        ("grep -r KEY .", "../.."),
        ("cat proc", "//"),
    ],
)
def test_a_shell_call_run_at_the_root_cannot_reach_proc_either(line: str, directory: str) -> None:
    assert decide(PROC_POLICY, {"command": line, "directory": directory}) is ASK


# -- what stays allowed ------------------------------------------------------------------------

ORDINARY = [
    (("test", "echo"), "test -f README.md && echo present"),
    (("test",), "test -v x"),
    (("test",), "test -n x -a -d src"),
    (("[",), "[ -d src ]"),
    (("[", "echo"), "[ -f README.md ] && echo present"),
    (("let",), "let x=1+2"),
    (("let",), "let 'count += 1' i++"),
    (("declare",), "declare -r x"),
    (("declare",), "declare -a list"),
    (("declare",), "declare -u name"),
    (("declare",), "declare -p"),
    (("local", "export"), "local x; export y"),
    (("read", "echo"), "read x <<< hi; echo done"),
    (("set", "ls"), "set -euo pipefail; ls"),
    (("set", "ls"), "set -e -u -x -v -f -C; ls"),
    (("set", "ls"), "set -o errexit -o nounset -o noclobber; ls"),
    (("set", "ls"), "set +e; ls"),
    (("set", "ls"), "set -- a b; ls"),
    (("set", "ls"), "set -o; ls"),
    (("git status",), "git status"),
    (("git status", "git diff"), "git status && git diff"),
    (("cd", "ls"), "cd sub && ls"),
    (("cd", "ls"), "cd sub && ls -la"),
    (("cd", "grep"), "cd src && grep -r foo ."),
    (("cat",), "cat /proc/cpuinfo"),
    (("cat",), "cat /proc/meminfo /proc/loadavg"),
    (("grep",), "grep -r foo src"),
    (("grep",), "grep -r foo ."),
    (("cat",), "cat src/main.c ../README.md"),
    (("ls",), "ls /usr/lib"),
]


@pytest.mark.parametrize(("prefixes", "line"), ORDINARY)
def test_ordinary_lines_stay_allowed(prefixes: tuple[str, ...], line: str) -> None:
    assert decide(prefixes, {"command": line}) is ALLOW


def test_git_status_in_the_working_directory_keeps_its_grant_key() -> None:
    grant = grant_for(
        "session", world="w", tool_name="shell_cmd", arguments={"command": "git status"},
        agent="Alice", chat_id="c1", approval_id="a1",
    )  # fmt: skip
    assert grant is not None
    assert analyze("git status").keys == frozenset({"git"})
    assert decide(("git status",), {"command": "git status", "directory": "."}) is ALLOW


# -- end to end: the test data is a real exploit --------------------------------------------

_BASH = shutil.which("bash")

END_TO_END = [
    (("echo", "test"), "echo 'a[$(touch P)]' >/dev/null; test -v 'b[_]'"),
    (("echo", "let"), "echo 'a[$(touch P)]' >/dev/null; let _"),
    (("read", "test"), "read x <<< 'a[$(touch P)]'; test -v 'b[x]'"),
    (("read", "test"), "read <<< 'a[$(touch P)]'; test -v 'b[REPLY]'"),
    (("printf", "test"), "printf -v x 'a[\\x24(touch P)]'; test -v 'b[x]'"),
    (("declare", "read"), "declare -i n; read n <<< 'a[$(touch P)]'"),
    (
        ("declare", "printf", "ls"),
        "declare -n r; printf -v r 'BASH_CMDS[ls]'; printf -v r /bin/sh; ls -c 'touch P'",
    ),
    (
        ("typeset", "read", "ls"),
        "typeset -n r; read r <<< 'BASH_CMDS[ls]'; read r <<< /bin/sh; ls -c 'touch P'",
    ),
]


@pytest.mark.skipif(_BASH is None, reason="needs bash")
@pytest.mark.parametrize(("prefixes", "line"), END_TO_END)
def test_the_exploit_runs_in_bash_and_the_policy_refuses_it(
    tmp_path: Path, prefixes: tuple[str, ...], line: str
) -> None:
    assert _BASH is not None
    subprocess.run(
        [_BASH, "--noprofile", "--norc", "-c", line],
        cwd=tmp_path,
        capture_output=True,
        timeout=20,
        check=False,
    )
    assert (tmp_path / "P").exists(), (
        "the line does not run its hidden command: fix the test data"
    )
    _refused(prefixes, line)


@pytest.mark.skipif(_BASH is None or shutil.which("git") is None, reason="needs bash and git")
def test_git_in_a_moved_to_bare_repository_runs_its_fsmonitor_and_is_refused(
    tmp_path: Path,
) -> None:
    lib = tmp_path / "vendor" / "lib"
    (lib / "objects").mkdir(parents=True)
    (lib / "refs" / "heads").mkdir(parents=True)
    (lib / "HEAD").write_text("ref: refs/heads/main\n")
    marker = tmp_path / "FSM"
    (lib / "config").write_text(
        f'[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch {marker}; false"\n'
    )
    line = "cd vendor/lib && git status"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    assert _BASH is not None
    subprocess.run(
        [_BASH, "--noprofile", "--norc", "-c", line],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=20,
        check=False,
    )
    assert marker.exists()
    assert decide(GIT_POLICY, {"command": line}) is ASK
    assert decide(GIT_POLICY, {"command": "git status", "directory": "vendor/lib"}) is ASK
