"""Recursive reads that start outside the working directory, and the shell tool's own
``directory`` argument (``shell.directories``).

Under a DENY ``\\.ssh/|id_rsa`` pattern, ``grep -r PRIVATE ..`` prints ``../.ssh/id_rsa``,
and ``{"command": "cat credentials", "directory": ".aws"}`` reads ``.aws/credentials``: no
word of either line spells the denied path.
"""

from __future__ import annotations

import pytest

from agentworld.shell.commands import analyze
from agentworld.shell.directories import joined_paths, moved_into


@pytest.mark.parametrize(
    "line",
    ["grep -r PRIVATE ..", "grep -R x /root", "grep --recursive x ~", "rg x /", "find / -name id_rsa",
     "du -a ..", "ls -R /root", "tree ~", "tar cf - /root", "cp -r /root/.ssh here", "grep -d recurse x .."],
)  # fmt: skip
def test_a_recursive_read_from_outside_is_moved(line: str) -> None:
    assert analyze(line).parts[0].moved


@pytest.mark.parametrize(
    "line",
    [
        "grep -r foo src",
        "grep foo ../notes.txt",
        "rg foo",
        "find . -name x",
        "ls /root",
        "cat /etc/hosts",
    ],
)
def test_other_reads_are_not_moved(line: str) -> None:
    assert not analyze(line).parts[0].moved


@pytest.mark.parametrize("directory", [".aws", "sub", "/tmp/x"])
def test_a_directory_argument_moves_parts_that_name_relative_paths(directory: str) -> None:
    parts = moved_into(analyze("cat credentials; rg KEY; cat /etc/hosts; ls").parts, directory)
    assert [p.moved for p in parts] == [True, True, False, False]


@pytest.mark.parametrize("directory", [None, "", ".", "./"])
def test_the_working_directory_moves_nothing(directory: str | None) -> None:
    assert not any(p.moved for p in moved_into(analyze("cat credentials").parts, directory))


def test_relative_paths_are_joined_onto_the_directory() -> None:
    assert joined_paths(("cat", "credentials", "/etc/hosts", "--file=k", "-n"), "x/../.aws") == (
        "cat .aws/credentials /etc/hosts --file=.aws/k -n"
    )
    assert joined_paths(("cat", "credentials"), ".") == ""
