"""Paths under ``/proc``, however a line spells them (SPEC P4; fail closed).

``/proc/<pid>/environ`` holds the environment of every process of the user: the keys the
person's own shell or another program was started with. A world rule that allows ``grep``
outranks the shipped rule that asks before ``/proc`` is read, so ``grep -aho
'OPENAI_API_KEY=[^[:cntrl:]]*' /proc/[0-9]*/environ | rev`` would print a key (reversed:
output masking misses it). A part that may name a path under ``/proc`` — other than a few
system-wide files (:data:`HARMLESS`) — is made ``unknown`` by
:mod:`~agentworld.shell.directories`: only a rule for every shell call may allow it.
:func:`names_proc` finds:

* ``/proc`` and anything under it, however spelled: ``//``, ``/./``, quotes, globs
  (``/pr?c``, ``/*/self/environ``), braces (``/{proc,x}``), a parameter where a directory
  goes (``/$d/environ``), an option's value (``--file=/proc/…``, ``-f/proc/…``,
  ``file:///proc/…``), a word of a script (``sed 'r /proc/1/environ'``), a redirection;
* a relative ``proc/<pid>/…``, and a path that may climb to ``/`` first
  (``../../../../proc/1/environ``, ``~/../../proc``) or starts in a directory that may be
  ``/`` (``cd / && cat proc/1/environ``);
* ``..`` after a directory, in a path that may start at ``/``: the kernel resolves it
  through symlinks no word shows (``/dev/fd/../environ`` is ``/proc/self/environ``).

:func:`may_be_root` tells whether a path may be ``/`` itself, for the recursive readers
(``grep -r KEY /``, ``find ../..``) that would walk into ``/proc``.

Not seen here: a path made at run time from text no word shows (``cat $(printf …)``,
``printf -v p …; cat $p``), a symlink of the working tree that points into ``/proc``,
paths a program reads from a file (``xargs cat < list``). Against those stands the
runtime: the shell gets a clean environment, and the runtime's own ``/proc/<pid>/environ``
is kept from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from urllib.parse import unquote

HARMLESS = frozenset(
    f"/proc/{name}"
    for name in (
        "cpuinfo",
        "meminfo",
        "loadavg",
        "uptime",
        "version",
        "stat",
        "filesystems",
        "swaps",
        "partitions",
    )
)
"""System-wide files that show no process's environment, memory, files or command line."""

_SEPARATORS = re.compile(r"[\s=:,]+")  # option values, PATH-like lists, a script's words
_WILD = re.compile(r"[*?\[$`]")
_EXPANSION = re.compile(r"[$`]")
_PROCESS = re.compile(r"[0-9]+|self|thread-self")
_SEQUENCE = re.compile(r"[^{},]*\.\.[^{},]*")
_MAX_WORDS = 256


def names_proc(words: Iterable[tuple[str, bool]], *, anchored: bool = False) -> bool:
    """Whether a path in ``words`` (``(value, literal)`` pairs) may be under ``/proc`` and is
    none of :data:`HARMLESS`. In a literal word ``*``, ``$`` … are plain characters.
    ``anchored``: a relative path may start at ``/``."""
    for value, literal in words:
        paths = _paths(value, dynamic=not literal)
        if paths is None or any(_walk(p, anchored, dynamic=not literal)[0] for p in paths):
            return True
    return False


def may_be_root(value: str, literal: bool, *, anchored: bool = False) -> bool:
    """Whether the path ``value`` may be ``/`` itself (``/``, ``..``, ``~/../..``, ``$d``)."""
    paths = _paths(value, dynamic=not literal)
    return paths is None or any(_walk(p, anchored, dynamic=not literal)[1] for p in paths)


def _paths(value: str, *, dynamic: bool) -> list[str] | None:
    """The strings of ``value`` that may be paths; None when brace expansion would make too
    many words to look at (the caller assumes the worst)."""
    words = _braces(_substituted(value)) if dynamic else [value]
    if words is None:
        return None
    # `curl file:///pro%63/1/environ`: a URL's path is percent-decoded (once) before use.
    words += [decoded for word in words if "%" in word and (decoded := unquote(word)) != word]
    paths: list[str] = []
    for word in words:
        for piece in _SEPARATORS.split(word):
            if piece:
                paths.append(piece)
            if piece.startswith("-") and "/" in piece:  # `-f/proc/1/environ`
                paths.append(piece[piece.index("/") :])
    return paths


def _substituted(value: str) -> str:
    """``value`` with each command substitution (kept as its source text) made one ``$``: its
    commands are parts of their own, and what it prints may be anything."""
    out: list[str] = []
    i = 0
    while i < len(value):
        if value.startswith("$(", i) or value[i] == "`":
            depth, j = 0, i
            while j < len(value):
                ch = value[j]
                if ch == "`" and value[i] == "`" and j > i:
                    break
                depth += (ch == "(") - (ch == ")")
                if value[i] == "$" and ch == ")" and depth == 0:
                    break
                j += 1
            out.append("$")
            i = j + 1
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _walk(path: str, anchored: bool, *, dynamic: bool) -> tuple[bool, bool]:
    """Whether ``path`` may be under ``/proc`` (and not :data:`HARMLESS`), and whether it may
    end at ``/``. ``at_root``: the next component may be a directory of ``/``; ``climbed``:
    the path may have left the working directory for ``/`` or above it."""
    if dynamic and path.startswith("~"):
        at_root, components = True, path.split("/")[1:]  # a home directory, then `..` …
    elif path.startswith("/"):
        at_root, components = True, path.split("/")
    else:
        at_root, components = anchored, path.split("/")
    parts = [c for c in components if c not in ("", ".")]
    plain = "/" + "/".join(parts)
    if path.startswith("/") and plain in HARMLESS and not (dynamic and _WILD.search(path)):
        return False, False
    climbed = at_root
    for i, part in enumerate(parts):
        wild = dynamic and _WILD.search(part) is not None
        nxt = parts[i + 1] if i + 1 < len(parts) else ""
        if part == "proc" and (
            i > 0 or at_root or _PROCESS.fullmatch(nxt) or (dynamic and _WILD.search(nxt))
        ):
            return True, False
        if at_root and wild and _could_be(part, "proc"):
            return True, False
        if part == "..":
            if i > 0 and parts[i - 1] != ".." and climbed:
                return True, False  # `/dev/fd/..` is `/proc/self`: symlinks resolve first
            at_root = climbed = True
        elif wild and (_EXPANSION.search(part) or (part.startswith(".") and _could_be(part, ".."))):
            at_root = climbed = True  # `$d`, `.*`: may be `..`, or `/` and more
        else:
            at_root = False
    return False, at_root


def _could_be(component: str, name: str) -> bool:
    """Whether the glob ``component`` may match ``name`` (a parameter may be anything; a
    bracket expression, any one character)."""
    if _EXPANSION.search(component):
        return True
    pattern, i = [], 0
    while i < len(component):
        ch = component[i]
        close = component.find("]", i + 2) if ch == "[" else -1
        if ch == "*":
            pattern.append(".*")
        elif ch == "?":
            pattern.append(".")
        elif close > 0:
            pattern.append(".")
            i = close
        else:
            pattern.append(re.escape(ch))
        i += 1
    return re.fullmatch("".join(pattern), name) is not None


def _braces(word: str) -> list[str] | None:
    """The words brace expansion makes of ``word`` (``{a,b}``, nested; a sequence such as
    ``{a..z}`` becomes ``*``), or None beyond :data:`_MAX_WORDS` of them."""
    pending, done = [word], []
    while pending:
        current = pending.pop()
        group = _first_group(current)
        if group is None:
            done.append(current)
        else:
            start, end, alternatives = group
            pending += [current[:start] + a + current[end + 1 :] for a in alternatives]
        if len(pending) + len(done) > _MAX_WORDS:
            return None
    return done


def _first_group(word: str) -> tuple[int, int, list[str]] | None:
    for start in _opening_braces(word):
        depth, commas = 0, [start]
        for j in range(start, len(word)):
            ch = word[j]
            depth += (ch == "{") - (ch == "}")
            if ch == "," and depth == 1:
                commas.append(j)
            if depth == 0:
                if len(commas) > 1:
                    cuts = [*commas, j]
                    return start, j, [word[a + 1 : b] for a, b in zip(cuts, cuts[1:], strict=False)]
                if _SEQUENCE.fullmatch(word[start + 1 : j]):
                    return start, j, ["*"]
                break
    return None


def _opening_braces(word: str) -> Iterator[int]:
    """Where a ``{`` that may open brace expansion stands (not ``${``)."""
    return (i for i, ch in enumerate(word) if ch == "{" and (i == 0 or word[i - 1] != "$"))
