"""Git run where the line moved to, and paths under ``/proc`` (SPEC P4: a tool call is
ALLOWed only when we fully understand what it will do).

* git run in a directory the line (or the call's ``directory``) moved to reads a repository
  configuration nobody saw (``core.fsmonitor`` runs a command);
* ``/proc/<pid>/environ`` holds another process's keys, and a rule that allows ``grep`` or
  ``cat`` is not written for reading it, however the path is spelled or reached.

Each is asked about (denied where nobody can answer), and the ordinary lines next to them are
still allowed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from shell_rule_helpers import decide_under_prefixes

from agentworld.approval.grants import grant_for
from agentworld.policy.rules import PolicyDecision
from agentworld.shell.commands import analyze

ALLOW = PolicyDecision.ALLOW
ASK = PolicyDecision.ASK_USER
DENY = PolicyDecision.DENY


# -- git in a repository the line moved to ---------------------------------------------------

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
    assert decide_under_prefixes(GIT_POLICY, arguments) is ASK
    assert decide_under_prefixes(GIT_POLICY, arguments, strict=True) is DENY


def test_git_after_a_cd_has_no_grant_key() -> None:
    analysis = analyze("cd vendor/lib && git status")
    assert [p.opacity for p in analysis.parts] == ["clear", "unknown"]
    assert analysis.keys is None


# -- /proc ------------------------------------------------------------------------------------

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
    assert decide_under_prefixes(PROC_POLICY, {"command": line}) is not ALLOW
    assert decide_under_prefixes(PROC_POLICY, {"command": line}, strict=True) is DENY


@pytest.mark.parametrize("directory", ["/proc", "/proc/self", "//proc/1/"])
def test_a_shell_call_run_in_proc_is_not_allowed(directory: str) -> None:
    assert decide_under_prefixes(PROC_POLICY, {"command": "cat environ", "directory": directory}) is ASK


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
    assert decide_under_prefixes(PROC_POLICY, {"command": line, "directory": directory}) is ASK


# -- what stays allowed ------------------------------------------------------------------------

ORDINARY = [
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
    assert decide_under_prefixes(prefixes, {"command": line}) is ALLOW


def test_git_status_in_the_working_directory_keeps_its_grant_key() -> None:
    grant = grant_for(
        "session", world="w", tool_name="shell_cmd", arguments={"command": "git status"},
        agent="Alice", chat_id="c1", approval_id="a1",
    )  # fmt: skip
    assert grant is not None
    assert analyze("git status").keys == frozenset({"git"})
    assert decide_under_prefixes(("git status",), {"command": "git status", "directory": "."}) is ALLOW


# -- end to end: a moved-to repository's configuration runs --------------------------------

_BASH = shutil.which("bash")


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
    assert decide_under_prefixes(GIT_POLICY, {"command": line}) is ASK
    assert decide_under_prefixes(GIT_POLICY, {"command": "git status", "directory": "vendor/lib"}) is ASK
