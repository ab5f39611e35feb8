"""Grants cover exactly what was approved (SPEC A5: rules and grants cover no more)."""

from __future__ import annotations

import pytest

from agentworld.approval.grants import find_covering_grant, grant_for


def session_grant(command: str):  # type: ignore[no-untyped-def]
    return grant_for(
        "session", world="w", tool_name="shell_cmd", arguments={"command": command},
        agent="a1", chat_id="c1", approval_id="approval_1",
    )


def covers(approved: str, later: str) -> bool:
    grant = session_grant(approved)
    assert grant is not None, approved
    found = find_covering_grant([grant], "shell_cmd", {"command": later}, agent="a1", chat_id="c1")
    return found is not None


@pytest.mark.parametrize(
    ("approved", "later"),
    [
        ("ls", "ls -la src"),
        ("git log", "git status"),  # a grant names commands, not their arguments
        ("ls && cat f", "cat g | ls"),
        ("sh -c 'ls'", "sh -c 'ls -la'"),
    ],
)
def test_a_grant_covers_the_same_commands(approved: str, later: str) -> None:
    assert covers(approved, later)


@pytest.mark.parametrize(
    ("approved", "later"),
    [
        ("ls", "./ls"),
        ("ls", "/tmp/x/ls"),
        ("ls", "PATH=. ls"),
        ("ls", "ls && rm -rf ~"),
        ("ls", "ls > out.txt"),
        ("ls > out.txt", "ls > other.txt"),  # a redirection's target is part of the grant
        ("sh -c 'ls'", "sh <<EOF\nrm -rf ~\nEOF"),
        ("sh -c 'ls'", "echo rm -rf ~ | sh"),
        ("sh -c 'ls'", "sh script.sh"),
        ("sh -c 'ls'", "sh -c \"$X\""),
        ("ls", "$(printf ls)"),
        ("ls", "l[s]"),
        ("ls", "echo ${PWD#$(ls)}"),
    ],
)
def test_a_grant_never_covers_more_than_was_approved(approved: str, later: str) -> None:
    assert not covers(approved, later)


@pytest.mark.parametrize(
    "approved",
    ['"$0" -c "ls"', "$CMD", "PATH=/tmp ls", "python3 -c 'print(1)'", "echo ${PWD#x}", "sh"],
)
def test_lines_we_cannot_read_fully_are_approved_once_never_remembered(approved: str) -> None:
    assert session_grant(approved) is None


@pytest.mark.parametrize(
    ("approved", "later", "covered"),
    [
        ("git status", {"command": "git status", "directory": "vendor/lib"}, False),
        ("cat x", {"command": "cat environ", "directory": "/proc/self"}, False),
        ("ls", {"command": "ls", "directory": "sub"}, True),
        ("git status", {"command": "git status", "directory": "."}, True),
    ],
)
def test_a_grant_sees_the_call_where_it_runs(
    approved: str, later: dict[str, str], covered: bool
) -> None:
    """A session approval of ``git status`` must not cover ``git status`` run in another
    repository by the call's ``directory`` (its configuration may set ``core.fsmonitor``), nor
    ``cat`` run in ``/proc/self``; the policy reads those as unknown, and so must the grant."""
    grant = session_grant(approved)
    assert grant is not None
    found = find_covering_grant([grant], "shell_cmd", later, agent="a1", chat_id="c1")
    assert (found is not None) is covered
