"""Parts that open relative paths after the line changed directory (``shell.directories``).

A DENY ``argsPattern`` of ``\\.ssh/`` never sees ``cd ~/.ssh && cat id_rsa`` spell the
path, nor one for ``/etc/shadow`` ``cd /etc && cat shadow`` or ``cat /etc//shadow``. So a
part after ``cd``/``pushd``/``popd`` (or under ``env -C``, ``git -C``, ``tar -C``) that names
a relative path is ``moved``, and paths are also spelled plainly for DENY patterns.
"""

from __future__ import annotations

import pytest

from agentworld.shell.commands import analyze


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
    from agentworld.shell.directories import normal_paths

    assert normal_paths(text) == plain
