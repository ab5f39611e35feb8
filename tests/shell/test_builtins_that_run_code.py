"""Builtins whose effect runs a command no word of the line shows (SPEC P4: a tool call is
ALLOWed only when we fully understand what it will do).

Under rules that allow only the builtins and programs they use, each of these would run a
hidden command:

* arithmetic evaluation of a variable's *value*: ``echo 'a[$(cmd)]' >/dev/null; test -v
  'b[_]'`` (``$_`` is the last argument of the previous command, and the subscript ``_`` is
  evaluated, value and all), ``let _``, ``declare -i n; read n <<< 'a[$(cmd)]'``;
* namerefs: ``declare -n r; printf -v r 'BASH_CMDS[ls]'; printf -v r /bin/sh; ls -c 'cmd'``;
* ``set -k``: every later ``NAME=value`` argument becomes an environment assignment
  (``git status GIT_CONFIG_KEY_0=core.fsmonitor …``).

Each is ``unknown`` (only a rule for every shell call may allow it), and the ordinary uses of
the same builtins are still allowed. The end-to-end tests run each exploit in bash.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from shell_rule_helpers import decide_under_prefixes

from agentworld.approval.grants import shell_shape
from agentworld.policy.rules import PolicyDecision
from agentworld.shell.commands import analyze

ALLOW = PolicyDecision.ALLOW
ASK = PolicyDecision.ASK_USER
DENY = PolicyDecision.DENY


def _refused(prefixes: tuple[str, ...], line: str) -> None:
    assert decide_under_prefixes(prefixes, {"command": line}) is ASK
    assert decide_under_prefixes(prefixes, {"command": line}, strict=True) is DENY
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
    assert decide_under_prefixes(("echo", "x", "[["), {"command": line}) is ASK


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
]


@pytest.mark.parametrize(("prefixes", "line"), ORDINARY)
def test_ordinary_uses_of_the_builtins_stay_allowed(prefixes: tuple[str, ...], line: str) -> None:
    assert decide_under_prefixes(prefixes, {"command": line}) is ALLOW


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
    assert (tmp_path / "P").exists(), "the line does not run its hidden command: fix the test data"
    _refused(prefixes, line)
