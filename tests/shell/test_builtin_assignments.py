"""Variables set by builtins without an ``=`` (``shell.assignments``).

``read 'BASH_CMDS[ls]' <<< /usr/bin/touch; ls P`` and ``printf -v 'BASH_CMDS[ls]'
/usr/bin/touch; ls P`` run ``touch P`` under a policy allowing ``read``, ``printf`` and
``ls``; ``printf -v HOME .; git status`` runs a repository's ``core.fsmonitor``. Setting a
variable that is not provably harmless this way is read like the plain assignment it
amounts to: ``unknown``.
"""

from __future__ import annotations

import pytest

from agentworld.shell.commands import analyze


@pytest.mark.parametrize(
    "line",
    [
        "read 'BASH_CMDS[ls]' <<< /usr/bin/touch",
        "read -r PATH <<< .",
        "read -a BASH_ALIASES <<< x",
        "read -ra 'BASH_CMDS' <<< x",
        "read x IFS <<< 'a b'",
        "printf -v 'BASH_CMDS[ls]' /usr/bin/touch",
        "printf -vPATH .",
        "printf -v HOME .",
        "printf -v GIT_DIR x",
        "printf -v LD_PRELOAD ./x.so",
        "printf -v BASH_ENV x",
        "printf -v ENV x",
        "printf -v CDPATH /etc",
        "printf -v http_proxy http://evil",
        "printf -v 'a[1]' x",
        "mapfile PATH < f",
        "mapfile -t -d , BASH_CMDS < f",
        "readarray -t GIT_CONFIG_PARAMETERS < f",
        "getopts x PATH",
        "let PATH=1",
        "let 'HOME+=1'",
        "let IFS++",
        "wait -p PATH",
        "hash -p /usr/bin/touch ls",
        "unset PATH",
        "unset -v GIT_CONFIG_NOSYSTEM",
        "declare 'BASH_CMDS[ls]=/usr/bin/touch'",
        "export PATH=.",
        "typeset HOME=.",
        "local IFS=x",
    ],
)
def test_a_builtin_setting_a_variable_that_matters_is_read_as_an_assignment(line: str) -> None:
    assert analyze(line).parts[0].opacity == "unknown"


def test_the_command_after_such_an_assignment_cannot_borrow_an_allow() -> None:
    analysis = analyze("read 'BASH_CMDS[ls]' <<< /usr/bin/touch; ls P")
    assert analysis.parts[0].opacity == "unknown"
    assert analysis.keys is None


@pytest.mark.parametrize(
    "line",
    [
        "read line <<< x",
        "read -r first rest <<< 'a b'",
        "read <<< x",
        "printf -v out '%s' x",
        "printf '%s\\n' PATH",
        "printf -- -v",
        "getopts ab opt",
        "let x=1+2",
        "let 'count += 1' i++",
        "hash -r",
        "unset tmp",
        "export PATH",
        "echo PATH=x",
    ],
)
def test_lower_case_plain_names_stay_clear(line: str) -> None:
    assert analyze(line).parts[0].opacity == "clear"


@pytest.mark.parametrize(
    ("name", "harmless"),
    [
        ("x", True),
        ("line", True),
        ("my_var2", True),
        ("PATH", False),
        ("Path", False),
        ("_", False),
        ("_x", False),
        ("a[1]", False),
        ("histchars", False),
        ("https_proxy", False),
        ("", False),
    ],
)
def test_only_plain_lower_case_names_are_harmless(name: str, harmless: bool) -> None:
    from agentworld.shell.assignments import harmless_variable

    assert harmless_variable(name) is harmless
