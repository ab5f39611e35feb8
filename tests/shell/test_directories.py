"""Parts that open paths their words do not spell where they are read (``shell.directories``).

A DENY ``argsPattern`` of ``\\.ssh/`` never sees ``cd ~/.ssh && cat id_rsa`` spell the
path, nor one for ``/etc/shadow`` ``cd /etc && cat shadow`` or ``cat /etc//shadow``; under
``\\.ssh/|id_rsa``, ``grep -r PRIVATE ..`` prints ``../.ssh/id_rsa``, and ``{"command": "cat
credentials", "directory": ".aws"}`` reads ``.aws/credentials``. So a part after
``cd``/``pushd``/``popd`` (or under ``env -C``, ``git -C``, ``tar -C``, or the shell tool's
``directory`` argument) that names a relative path is ``moved``, and so is a recursive read
that starts outside the working directory; paths are also spelled plainly for DENY patterns.
"""

from __future__ import annotations

import pytest

from agentworld.shell.commands import analyze
from agentworld.shell.directories import joined_paths, moved_into, normal_paths


def _moved(line: str) -> list[tuple[str, bool]]:
    return [(p.text, p.moved) for p in analyze(line).parts]


@pytest.mark.parametrize(
    ("line", "part"),
    [
        ("cd ~/.ssh && cat id_rsa", "cat id_rsa"),
        ("cd /etc && cat shadow", "cat shadow"),
        ("pushd /etc; cat shadow", "cat shadow"),
        ("popd; cat shadow", "cat shadow"),
        ("cd /etc; cd ..; cat etc/shadow", "cat etc/shadow"),
        ("cd /etc && cat < shadow", "cat < shadow"),
        ("cd /etc && grep --file=shadow x", "grep --file=shadow x"),
        ("cd /etc && ./script", "./script"),
        ("bash -c 'cd /etc; cat shadow'", "cat shadow"),
        ("env -C /etc cat shadow", "cat shadow"),
        ("env --chdir=/etc cat shadow", "cat shadow"),
        ("sudo -D /etc cat shadow", "cat shadow"),
        ("git -C /etc show HEAD:shadow", "git -C /etc show HEAD:shadow"),
        ("tar -C /etc -cf - shadow", "tar -C /etc -cf - shadow"),
        ("tar cCf /etc - shadow", "tar cCf /etc - shadow"),
    ],
)
def test_a_relative_path_after_a_change_of_directory_is_moved(line: str, part: str) -> None:
    assert (part, True) in _moved(line)


@pytest.mark.parametrize(
    "line",
    [
        "cd sub && ls",
        "cd sub && ls -la",
        "cd /etc && cat /etc/passwd",
        "cat shadow; cd /etc",
        "cat shadow",
        "git status",
        "env ls x",
    ],
)
def test_no_change_of_directory_or_no_relative_path_is_not_moved(line: str) -> None:
    assert not any(moved for _, moved in _moved(line))


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("cat /etc//shadow", "cat /etc/shadow"),
        ("cat /etc/./shadow", "cat /etc/shadow"),
        ("cat /etc/x/../shadow", "cat /etc/shadow"),
        ("cat ~/.ssh//id_rsa", "cat ~/.ssh/id_rsa"),
        ("ls ~/.ssh//", "ls ~/.ssh/"),
        ("grep --file=/etc/./shadow x", "grep --file=/etc/shadow x"),
        ("cat 'a//b'", "cat 'a/b'"),
        ("echo plain words", "echo plain words"),
    ],
)
def test_paths_are_spelled_plainly(text: str, plain: str) -> None:
    assert normal_paths(text) == plain


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
