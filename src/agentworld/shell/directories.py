"""Which files a part names, when the line moves between directories or spells paths oddly.

A DENY pattern such as ``\\.ssh/`` or ``/etc/shadow`` is searched in the text of each
command. ``cd /etc && cat shadow`` opens ``/etc/shadow`` without ever spelling it, and
``cat /etc//shadow`` or ``cat /etc/./shadow`` spell it differently. So:

* :func:`mark_directory_changes` marks every part that runs after a ``cd``, ``pushd`` or
  ``popd`` of the line (or in a directory of its own choosing: ``env -C``, ``git -C``,
  ``tar -C``) and names files by relative paths as ``moved``: a pattern that misses its
  text may still match the files it opens, as with a glob;
* a recursive reader (``grep -r``, ``rg``, ``find``, ``du``, ``ls -R`` …) whose start is
  not provably inside the working directory (``/``, ``~``, ``..``) reads files no word of
  the line names (``grep -r KEY ..`` prints ``../.ssh/id_rsa``): it is ``moved`` too;
* :func:`moved_into` does the same for a tool call's own ``directory`` argument, and
  :func:`joined_paths` spells the part's relative paths inside it for DENY patterns;
* :func:`normal_paths` spells the paths of a text the way the kernel resolves them
  (``//`` and ``/./`` collapsed, ``..`` resolved lexically), a second text for DENY
  patterns to search.

Both passes also make two kinds of part ``unknown``, since which files they read (or, for
git, which configuration runs code) depends on where they run:

* ``git`` after the line (or the call's ``directory``) moved elsewhere: git reads the
  configuration of the repository it finds from its working directory, one nobody saw
  (``cd vendor/lib && git status`` runs that repository's ``core.fsmonitor``);
* a part that may read under ``/proc`` (:mod:`~agentworld.shell._proc_paths`), relative
  paths included when the line may have moved to ``/`` (``cd / && cat proc/1/environ``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from agentworld.shell._proc_paths import may_be_root, names_proc
from agentworld.shell.split import CommandPart

_CHANGES = frozenset({"cd", "pushd", "popd"})
# Programs that take a directory to work in (`git -C DIR`, `tar -C DIR`, `make -C DIR`).
_OWN_DIRECTORY = frozenset({"git", "tar", "make", "gmake"})
# Programs that read every file under the directories they are given (or under `.`), and
# those that do with one of these options (short letters, long spellings).
_ALWAYS_RECURSIVE = frozenset({"rg", "ag", "ack", "find", "du", "tree", "tar"})
_RECURSIVE_OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    **dict.fromkeys(("grep", "egrep", "fgrep", "zgrep"), ("rRd", ("--recursive", "--dereference-recursive", "--directories"))),
    "ls": ("R", ("--recursive",)),
    "cp": ("rRa", ("--recursive", "--archive")),
    "rsync": ("ra", ("--recursive", "--archive")),
    "zip": ("rR", ("--recurse-paths", "--recurse-patterns")),
    "scp": ("r", ()),
    "diff": ("r", ("--recursive",)),
}
_REDIRECT_TARGET = re.compile(r"[<>]\|?\s*([^\s<>&|;()]+)")
_PATH = re.compile(r"[^\s'\"=:,]*/[^\s'\"=:,]*")
_CLIMBS = re.compile(r"(?:^|[=:,/])\.\.(?:/|$)")


def mark_directory_changes(parts: Iterable[CommandPart]) -> list[CommandPart]:
    """``parts`` in order, those that open relative paths in a directory the line changed
    marked ``moved`` (and the mark dropped where no relative path is named); ``git`` there,
    and every part that may read under ``/proc``, made ``unknown``."""
    moved = at_root = False  # at_root: the directory the line moved to may be `/`
    absolute = False  # it may be a directory outside the working tree: `/dev/fd`, `/tmp/x`
    marked: list[CommandPart] = []
    for part in parts:
        own = part.moved or _works_elsewhere(part)  # `env -C DIR`, `find -execdir`, `tar -C`
        elsewhere = moved or own
        recursive = reads_recursively(part)
        flag = (elsewhere and (recursive or _names_relative_paths(part))) or (
            recursive and _reaches_outside(part)
        )
        new = part if flag == part.moved else replace(part, moved=flag)
        if (
            (part.root == "git" and (moved or part.moved))
            or _reads_proc(part, (moved and at_root) or own)
            or ((absolute or own) and _climbs(part))  # `env -C /dev/fd cat ../environ`
        ):
            new = _unknown(new)
        marked.append(new)
        if part.root in _CHANGES:
            moved, at_root = True, _lands_at_root(part, at_root)
            absolute = absolute or at_root or _lands_outside(part)
    return marked


def _lands_outside(part: CommandPart) -> bool:
    """Whether a ``cd`` may go to a directory named from ``/`` or home, where ``..`` resolves
    through symlinks no word shows: after ``cd /dev/fd``, ``../../1/environ`` is
    ``/proc/1/environ``, as ``/dev/fd/../../1/environ`` would be (``_proc_paths``)."""
    return any(
        w.startswith(("/", "~")) or not part.is_literal(i)
        for i, w in enumerate(part.argv)
        if i and not w.startswith("-")
    )


def _climbs(part: CommandPart) -> bool:
    """Whether a word of the part names a path that climbs with ``..``."""
    return any(_CLIMBS.search(w) for w in (*part.argv[1:], *part.redirect_targets))


def moved_into(parts: Iterable[CommandPart], directory: object) -> list[CommandPart]:
    """``parts`` as run in ``directory`` (a tool call's ``directory`` argument): those that
    open relative paths (or read a directory recursively) are ``moved``, as after ``cd``,
    unless the directory is the working directory itself; ``git`` there (a repository whose
    configuration nobody saw), and any part run in ``/proc`` or reading there, ``unknown``."""
    if not _elsewhere(directory):
        return list(parts)
    named, literal = (directory, True) if isinstance(directory, str) else ("$directory", False)
    in_proc = names_proc([(named, literal)])
    at_root = may_be_root(named, literal)
    marked: list[CommandPart] = []
    for p in parts:
        new = replace(p, moved=True) if _names_relative_paths(p) or reads_recursively(p) else p
        if in_proc or p.root == "git" or _reads_proc(p, at_root):
            new = _unknown(new)
        marked.append(new)
    return marked


def _unknown(part: CommandPart) -> CommandPart:
    return replace(part, opacity="unknown", key=None)


def _reads_proc(part: CommandPart, anchored: bool) -> bool:
    """Whether the part names a path that may be under ``/proc``, or reads recursively from
    a directory that may be ``/``. ``anchored``: it runs where ``/`` may be."""
    words = [(w, part.is_literal(i)) for i, w in enumerate(part.argv)]
    if names_proc(words, anchored=anchored) or names_proc(
        ((t, False) for t in part.redirect_targets), anchored=anchored
    ):
        return True
    return reads_recursively(part) and (
        anchored or any(may_be_root(w, literal, anchored=anchored) for w, literal in words[1:])
    )


def _lands_at_root(part: CommandPart, at_root: bool) -> bool:
    """Whether the directory a ``cd``/``pushd``/``popd`` goes to may be ``/``: ``..``, ``/``,
    a parameter, ``-`` (the last one), the directory stack, or home (which may be ``/``)."""
    targets = [(w, part.is_literal(i)) for i, w in enumerate(part.argv) if i and not w.startswith("-")]
    if part.root == "popd" or len(targets) != 1 or "-" in part.argv[1:]:
        return True
    target, literal = targets[0]
    if part.root == "pushd" and target.startswith("+"):
        return True  # `pushd +1`: a directory of the stack
    return may_be_root(target, literal, anchored=at_root) or not literal


def joined_paths(argv: Sequence[str], directory: object) -> str:
    """The words of ``argv`` with each relative path (an operand, or an option's value after
    ``=``) joined onto ``directory`` and spelled plainly: ``cat credentials`` run in
    ``.aws`` reads ``.aws/credentials``. Empty when there is no such directory."""
    if not _elsewhere(directory) or not isinstance(directory, str):
        return ""
    joined: list[str] = []
    for word in argv[1:]:
        name, eq, value = word.partition("=") if word.startswith("-") else ("", "", word)
        if value and value != "-" and not value.startswith(("/", "~")):
            word = f"{name}{eq}{_normal(posixpath.join(directory, value))}"
        joined.append(word)
    return " ".join([*argv[:1], *joined])


def _elsewhere(directory: object) -> bool:
    return directory is not None and directory not in ("", ".", "./")


def reads_recursively(part: CommandPart) -> bool:
    """Whether the part reads every file under a directory (``grep -r``, ``rg``, ``find``)."""
    if part.root in _ALWAYS_RECURSIVE:
        return True
    letters, spellings = _RECURSIVE_OPTIONS.get(part.root, ("", ()))
    for word in part.argv[1:]:
        if word == "--":
            return False
        if word.startswith("--"):
            option = word.partition("=")[0]
            if len(option) > 2 and any(s.startswith(option) for s in spellings):
                return True
        elif word.startswith("-") and any(letter in letters for letter in word[1:]):
            return True
    return False


def _reaches_outside(part: CommandPart) -> bool:
    """Whether a word (or an option's value) is a path that may leave the working directory:
    absolute, from ``~``, or climbing out with ``..``."""
    for word in part.argv[1:]:
        value = word.partition("=")[2] if word.startswith("-") else word
        if value.startswith(("/", "~")) or (value and posixpath.normpath(value).startswith("..")):
            return True
    return False


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
