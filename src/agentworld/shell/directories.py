"""Which files a part names, when the line moves between directories or spells paths oddly.

A DENY pattern such as ``\\.ssh/`` or ``/etc/shadow`` is searched in the text of each
command. ``cd /etc && cat shadow`` opens ``/etc/shadow`` without ever spelling it, and
``cat /etc//shadow`` or ``cat /etc/./shadow`` spell it differently. So:

* :func:`mark_directory_changes` marks every part that runs after a ``cd``, ``pushd`` or
  ``popd`` of the line (or in a directory of its own choosing: ``env -C``, ``git -C``,
  ``tar -C``) and names files by relative paths as ``moved``: a pattern that misses its
  text may still match the files it opens, as with a glob;
* :func:`normal_paths` spells the paths of a text the way the kernel resolves them
  (``//`` and ``/./`` collapsed, ``..`` resolved lexically), a second text for DENY
  patterns to search.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import replace

from agentworld.shell.split import CommandPart

_CHANGES = frozenset({"cd", "pushd", "popd"})
# Programs that take a directory to work in (`git -C DIR`, `tar -C DIR`, `make -C DIR`).
_OWN_DIRECTORY = frozenset({"git", "tar", "make", "gmake"})
_REDIRECT_TARGET = re.compile(r"[<>]\|?\s*([^\s<>&|;()]+)")
_PATH = re.compile(r"[^\s'\"=:,]*/[^\s'\"=:,]*")


def mark_directory_changes(parts: Iterable[CommandPart]) -> list[CommandPart]:
    """``parts`` in order, those that open relative paths in a directory the line changed
    marked ``moved`` (and the mark dropped where no relative path is named)."""
    moved = False
    marked: list[CommandPart] = []
    for part in parts:
        elsewhere = moved or part.moved or _works_elsewhere(part)
        flag = elsewhere and _names_relative_paths(part)
        marked.append(part if flag == part.moved else replace(part, moved=flag))
        moved = moved or part.root in _CHANGES
    return marked


def _works_elsewhere(part: CommandPart) -> bool:
    if part.root not in _OWN_DIRECTORY:
        return False
    for i, word in enumerate(part.argv[1:], start=1):
        if word.startswith(("-C", "--dir")) or (
            part.root == "tar" and (word.startswith("-") or i == 1) and "C" in word
        ):
            return True
    return False


def _names_relative_paths(part: CommandPart) -> bool:
    """Whether a word (past the command name, unless that holds a ``/``) or a redirection
    of the part names a path that is not absolute. Bare options (``-la``) are not paths;
    an option's value after ``=`` is."""
    words = list(part.argv[1:])
    if part.argv and "/" in part.argv[0]:
        words.append(part.argv[0])
    for word in words:
        if word.startswith("-"):
            word = word.partition("=")[2] if "=" in word else ""
        if word and word != "-" and not word.startswith(("/", "~")):
            return True
    for target in _REDIRECT_TARGET.findall(part.text):
        if not target.strip("'\"").startswith(("/", "~")):
            return True
    return False


def normal_paths(text: str) -> str:
    """``text`` with each path spelled plainly: ``/etc//shadow``, ``/etc/./shadow`` and
    ``/etc/x/../shadow`` become ``/etc/shadow`` (a trailing ``/`` is kept)."""
    return _PATH.sub(lambda m: _normal(m[0]), text)


def _normal(path: str) -> str:
    plain = posixpath.normpath(path)
    return plain + "/" if path.endswith("/") and not plain.endswith("/") else plain
