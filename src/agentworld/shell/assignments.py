"""Variables a builtin assigns without an ``=`` in sight (``read``, ``printf -v`` …).

``PATH=. ls`` or ``x=1`` is read as an assignment and asked about. Bash has other ways to
set a variable: ``read 'BASH_CMDS[ls]' <<< /usr/bin/touch; ls P`` makes ``ls`` run
``touch``, ``printf -v HOME .`` makes the next ``git`` read a repository's configuration
as the user's own, ``getopts x PATH`` sets ``PATH`` to ``?``. :func:`assigned_names`
names the variables such a builtin sets (or unsets), so a line that sets one which is not
provably harmless is treated like the plain assignment it amounts to.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentworld.shell.words import Word

# Lower-case names bash or common programs still read (history, job control, proxies).
_READ_BY_SOMEONE = frozenset({"histchars", "auto_resume"})
_HARMLESS_NAME = re.compile(r"[a-z][a-z0-9_]*")
# name -> (options that take a value, options whose value is a variable name)
_OPTIONS: dict[str, tuple[str, str]] = {
    "read": ("adinNptu", "a"),
    "mapfile": ("dnOsuCc", ""),
    "readarray": ("dnOsuCc", ""),
    "wait": ("p", "p"),
    "unset": ("", ""),
}
# `let x=1`, `let 'x+=2'`, `let x++`, `let --x`: the targets of an arithmetic assignment.
_ARITHMETIC_TARGET = re.compile(
    r"([A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
    r"|([A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?)\s*(?:\+\+|--)"
    r"|(?:\+\+|--)\s*([A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?)"
)


def harmless_variable(name: str) -> bool:
    """Whether setting ``name`` cannot change what a later command runs or reads: a plain
    lower-case name. Upper-case names (``PATH``, ``HOME``, ``GIT_DIR``, ``LD_PRELOAD``,
    ``BASH_ENV`` …), subscripts (``BASH_CMDS[ls]``, whose subscript is arithmetic too) and
    the few lower-case names programs read (``http_proxy``) are not."""
    return (
        _HARMLESS_NAME.fullmatch(name) is not None
        and name not in _READ_BY_SOMEONE
        and not name.endswith("proxy")
    )


def assigned_names(builtin: str, words: Sequence[Word]) -> tuple[str, ...] | None:
    """The variables ``builtin`` (``words[0]``'s name) sets or unsets with these words; None
    for a command that assigns none this way. ``hash -p FILE NAME`` counts as setting
    ``BASH_CMDS``, which it does."""
    args = [w.value for w in words[1:]]
    if builtin == "printf":
        return tuple(_printf_names(args))
    if builtin == "getopts":
        return tuple(args[1:2])
    if builtin == "let":
        return tuple(n for a in args for m in _ARITHMETIC_TARGET.finditer(a) for n in m.groups() if n)
    if builtin == "hash":
        return ("BASH_CMDS",) if any(a.startswith("-") and "p" in a for a in args) else ()
    if builtin not in _OPTIONS:
        return None
    valued, naming = _OPTIONS[builtin]
    names: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if operands or arg == "-" or not arg.startswith("-"):
            operands.append(arg)
            continue
        if arg == "--":
            operands += args[i:]
            break
        for j, letter in enumerate(arg[1:], start=2):
            if letter in valued:
                value = arg[j:]
                if not value and i < len(args):
                    value, i = args[i], i + 1
                if letter in naming:
                    names.append(value)
                break
    if builtin in ("mapfile", "readarray"):
        operands = operands[:1]
    elif builtin == "wait":
        operands = []  # process ids
    return (*names, *operands)  # with none, REPLY or MAPFILE: harmless


def _printf_names(args: list[str]) -> list[str]:
    """``printf -v NAME`` / ``-vNAME`` (bash's printf has no other option)."""
    names: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-v"):
        value = args[i][2:]
        i += 1
        if not value and i < len(args):
            value, i = args[i], i + 1
        names.append(value)
    return names
