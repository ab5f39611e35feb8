"""A grant covers the files the person saw written (SPEC C3): for a redirecting shell line the
redirect targets, resolved inside the working directory, are part of the grant."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agentworld.approval.grants import Grant, GrantScope, find_covering_grant, grant_for
from agentworld.runtime.path_views import redirect_resolver

SHELL = "shell_cmd"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work" / "sub").mkdir(parents=True)
    return tmp_path / "work"


def call(command: str, **more: str) -> dict[str, Any]:
    return {"command": command, **more}


def approve(work: Path, scope: GrantScope, arguments: dict[str, Any], *, agent: str = "a1", chat_id: str = "c1") -> Grant:
    made = grant_for(
        scope, world="w", tool_name=SHELL, arguments=arguments, agent=agent, chat_id=chat_id,
        approval_id="approval_1", resolve=redirect_resolver(arguments, str(work)),
    )
    assert made is not None
    return made


def covered(work: Path, grant: Grant, arguments: dict[str, Any], *, agent: str = "a1", chat_id: str = "c1") -> bool:
    found = find_covering_grant(
        [grant], SHELL, arguments, agent=agent, chat_id=chat_id, resolve=redirect_resolver(arguments, str(work))
    )
    return found is not None


@pytest.mark.parametrize("scope", ["session", "always"])
def test_a_grant_records_the_targets_it_was_approved_to_write(work: Path, scope: GrantScope) -> None:
    made = approve(work, scope, call("echo note > notes.txt && echo log >> ./out//log.txt 2>&1"))

    assert made.redirect_targets == frozenset({"notes.txt", "out/log.txt"})
    assert made.roots == frozenset({"echo"})


@pytest.mark.parametrize(
    "later",
    [
        "echo x > notes.txt",
        "echo other text >> notes.txt",
        "echo x > ./notes.txt",
        "echo x >| notes.txt 2>/dev/null",
        "echo x > 'notes.txt'",
        "echo x &> notes.txt",
        "{ echo a; echo b; } > notes.txt",
        "echo $(echo a >> notes.txt) > notes.txt",
        "echo x \\\n  > notes.txt",
        "echo x",  # writing nothing is within the grant too
    ],
)
def test_a_session_grant_for_a_redirect_covers_writing_the_same_file(work: Path, later: str) -> None:
    grant = approve(work, "session", call("echo note > notes.txt"))

    assert covered(work, grant, call(later))


@pytest.mark.parametrize(
    "later",
    [
        "echo x >> ~/.bashrc",
        "echo x > ../notes.txt",
        "echo x > sub/notes.txt",
        "echo x > /tmp/notes.txt",
        "echo x > other.txt",
        "echo x > notes.txt > other.txt",
        "echo x > notes.txt; echo y > other.txt",
        'echo x > "$HOME/notes.txt"',
        "echo x > $F",
        "echo x > notes.tx?",
        "cd sub && echo x > notes.txt",
        "echo x > notes.txt && cd .. && echo y > notes.txt",
        "echo x | sed -i s/a/b/ notes.txt",
        "echo $(echo a > ../notes.txt) > notes.txt",
        "echo x 1<>../notes.txt",
        "{ echo a; echo b > .bashrc; } > notes.txt",
    ],
)
def test_a_session_grant_for_a_redirect_does_not_cover_another_target(work: Path, later: str) -> None:
    grant = approve(work, "session", call("echo note > notes.txt"))

    assert not covered(work, grant, call(later))


def test_the_target_is_placed_from_the_calls_directory(work: Path) -> None:
    grant = approve(work, "session", call("echo note > notes.txt"))

    assert not covered(work, grant, call("echo x > notes.txt", directory="sub"))
    assert covered(work, grant, call("echo x > ../notes.txt", directory="sub"))
    assert covered(work, grant, call(f"echo x > {work}/notes.txt"))  # an absolute path inside


def test_a_symlink_that_leads_elsewhere_is_not_the_approved_file(work: Path, tmp_path: Path) -> None:
    grant = approve(work, "session", call("echo note > notes.txt"))
    (tmp_path / "bashrc").write_text("")
    (work / "notes.txt").symlink_to(tmp_path / "bashrc")

    assert not covered(work, grant, call("echo x >> notes.txt"))
    os.remove(work / "notes.txt")
    (work / "notes.txt").symlink_to(work / "other.txt")
    assert not covered(work, grant, call("echo x >> notes.txt"))


def test_another_agents_or_chats_call_is_not_covered_by_a_session_grant(work: Path) -> None:
    grant = approve(work, "session", call("echo note > notes.txt"))

    assert not covered(work, grant, call("echo x > notes.txt"), agent="a2")
    assert not covered(work, grant, call("echo x > notes.txt"), chat_id="c2")
    always = approve(work, "always", call("echo note > notes.txt"))
    assert covered(work, always, call("echo x > notes.txt"), agent="a2", chat_id="c2")


@pytest.mark.parametrize(
    ("approved", "plain"),
    [
        ("echo x > /tmp/outside.txt", "echo y"),  # outside the working directory: never covered
        ("echo x > ../outside.txt", "echo y"),
        ("echo x > $F", "echo y"),  # known only at run time
        ("sed -i s/a/b/ notes.txt", "sed -n p notes.txt"),  # writes by an option
        ("bash -c 'echo x > notes.txt'", "bash -c 'echo y'"),  # a script's redirections
        ("cd sub && echo x > notes.txt", "cd sub && echo y"),
    ],
)
def test_a_line_whose_writes_cannot_be_placed_is_remembered_without_any(
    work: Path, approved: str, plain: str
) -> None:
    """The commands are remembered, the writes are not: the same line is asked about again,
    the same commands writing nothing are covered."""
    grant = approve(work, "session", call(approved))

    assert grant.redirect_targets is None and not grant.allow_redirection
    assert not covered(work, grant, call(approved))
    assert covered(work, grant, call(plain))


def test_a_grant_stored_before_targets_were_recorded_covers_no_writing_line(work: Path) -> None:
    old = Grant(
        grant_id="grant_old", world="w", scope="session", tool_name=SHELL, agent="a1", chat_id="c1",
        roots=frozenset({"echo"}), allow_redirection=True,
    )

    assert covered(work, old, call("echo x"))
    assert not covered(work, old, call("echo x > notes.txt"))
    assert not covered(work, old, call("echo x >> ~/.bashrc"))


def test_without_a_place_for_targets_no_writing_line_is_covered(work: Path) -> None:
    grant = approve(work, "session", call("echo note > notes.txt"))

    found = find_covering_grant([grant], SHELL, call("echo x > notes.txt"), agent="a1", chat_id="c1")

    assert found is None
