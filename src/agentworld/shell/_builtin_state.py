"""Builtins that change how bash evaluates or reads what comes after them (SPEC P4; fail closed).

Bash evaluates arithmetic in more places than ``$(( ))``, and evaluating a variable
evaluates the text it holds, recursively: a value ``a[$(cmd)]`` runs ``cmd``. No ``$``
need be in sight:

* ``let EXPR`` evaluates the variables EXPR names: ``echo 'a[$(cmd)]' >/dev/null; let _``
  runs ``cmd`` (``$_`` is the last argument of the previous command), and so does ``read x
  <<< 'a[$(cmd)]'; let x``;
* ``test -v 'b[SUB]'`` (and ``[ -v … ]``) evaluates the subscript SUB, ``_`` or ``x`` alike;
* ``declare -i n`` gives ``n`` the integer attribute: every later assignment to it (``read
  n``, ``printf -v n``) is evaluated.

``declare -n r`` makes ``r`` a nameref: ``printf -v r 'BASH_CMDS[ls]'; printf -v r
/bin/sh`` then sets ``BASH_CMDS[ls]`` through it, and the next ``ls`` runs ``/bin/sh``.
``set -k`` makes every later ``NAME=value`` argument an environment assignment (``git
status GIT_CONFIG_KEY_0=core.fsmonitor …``), ``set -a`` exports every variable set after
it, ``set -H`` replays history into later lines, ``set -o posix`` changes how they are
read, ``shopt -s expand_aliases`` lets aliases rewrite them. :func:`changes_evaluation`
names these forms and :func:`hide_arithmetic` the ``let`` lines that may evaluate a value
nobody saw; :mod:`~agentworld.shell.commands` makes them ``unknown``.

``$(( ))``, ``$[ ]``, ``(( ))``, ``[[ ]]`` and every ``${..}`` form but ``${NAME}`` (offsets
``${x:y}``, subscripts ``${a[_]}``) never get here: the strict reader refuses them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from agentworld.shell.assignments import assigned_names, harmless_variable
from agentworld.shell.split import CommandPart
from agentworld.shell.words import Word

_DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})
# `-n` nameref (and `export -n`, which un-exports), `-i` integer: later assignments or
# lookups through the name do something no word shows. `-l`/`-u`/`-c` only change case.
_DECLARATION_LETTERS = frozenset("ni")
# `set` letters and `-o` names that change nothing about what later commands run or how
# they are read. The rest (`-k` keyword, `-a` allexport, `-H` histexpand, `-o history`,
# `-T`/`-E` trap inheritance, `-P` physical, `-p` privileged, `-o posix`, `-o vi` …) are
# unknown, turned on or off.
_HARMLESS_SET_LETTERS = frozenset("euxvfCbhmn")
HARMLESS_SET_O = frozenset(
    {"errexit", "nounset", "pipefail", "xtrace", "verbose", "noglob", "noclobber", "noexec",
     "notify", "hashall", "monitor", "ignoreeof", "braceexpand"}
)  # fmt: skip
# `shopt` options that only change how globs match or the exit status of a pipeline;
# `expand_aliases`, `extdebug`, `sourcepath`, `compat*`, `xpg_echo` … change what runs.
_HARMLESS_SHOPT = frozenset(
    {"nullglob", "failglob", "dotglob", "nocaseglob", "globstar", "extglob", "nocasematch",
     "lastpipe", "inherit_errexit", "checkwinsize", "histappend"}
)  # fmt: skip
# Builtins that put text the line chose into a variable without an `=` (`read x`, REPLY,
# OPTARG, MAPFILE, `printf -v`, `wait -p`, `compgen -V`).
_SETTERS = frozenset({"read", "mapfile", "readarray", "getopts", "compgen"})
_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_#@])[A-Za-z_][A-Za-z0-9_]*")


def changes_evaluation(builtin: str, words: Sequence[Word]) -> bool:
    """Whether ``words`` (``words[0]`` named ``builtin``) evaluate text no word shows or change
    how later commands are read: see the module's documentation. ``let`` is judged with the
    rest of its line (:func:`hide_arithmetic`)."""
    args = words[1:]
    if builtin in _DECLARATIONS:
        return any(_option(w.value) and not _DECLARATION_LETTERS.isdisjoint(w.value) for w in args)
    if builtin in ("test", "["):
        values = [w.value for w in args]
        return any(v in ("-v", "-R") for v in values) and any("[" in v for v in values)
    if builtin == "set":
        return _set_changes_reading(args)
    if builtin == "shopt":
        return _shopt_changes_reading(args)
    return False


def _option(value: str) -> bool:
    return len(value) > 1 and value[0] in "-+" and value != "--"


def _set_changes_reading(args: Sequence[Word]) -> bool:
    """``set`` with an option outside the harmless ones, or one we cannot read (``set
    $opts``). Words after ``--``, ``-`` or the first operand are positional parameters."""
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if not word.literal:
            return True
        if word.value in ("--", "-") or not _option(word.value):
            return False
        for letter in word.value[1:]:
            if letter == "o":
                if i < len(args):  # `set -o` alone lists the options
                    name = args[i]
                    i += 1
                    if not name.literal or name.value not in HARMLESS_SET_O:
                        return True
            elif letter not in _HARMLESS_SET_LETTERS:
                return True
    return False


def _shopt_changes_reading(args: Sequence[Word]) -> bool:
    """``shopt -s``/``-u`` of an option outside the harmless ones (``-o``: a ``set -o``
    name); listing them (``shopt``, ``shopt -p``, ``shopt -q x``) changes nothing."""
    if not all(w.literal for w in args):
        return True
    flags = "".join(w.value[1:] for w in args if _option(w.value))
    names = [w.value for w in args if not _option(w.value) and w.value != "--"]
    if not set(flags) & set("su"):
        return False
    harmless = HARMLESS_SET_O if "o" in flags else _HARMLESS_SHOPT
    return not set(flags) <= set("suopq") or not all(n in harmless for n in names)


def hide_arithmetic(parts: Iterable[CommandPart]) -> list[CommandPart]:
    """``parts``, with each ``let`` that may evaluate a value nobody saw made ``unknown``: one
    that names a variable which is not a plain lower-case name (``_``, ``REPLY``, ``OPTARG``,
    a subscript), or any ``let`` on a line where a builtin puts text into a variable (``read``,
    ``printf -v`` …). The shell starts with a clean environment, so a plain lower-case name
    holds nothing else the line chose; ``let x=1+2`` alone stays clear."""
    listed = list(parts)
    setters = any(_sets_variables(p) for p in listed)
    return [
        replace(p, opacity="unknown", key=None)
        if p.root == "let" and p.opacity == "clear" and (setters or not _plain(p.argv[1:]))
        else p
        for p in listed
    ]


def _sets_variables(part: CommandPart) -> bool:
    if part.root in _SETTERS:
        return True
    words = [Word(a, a, True, 0, 0) for a in part.argv]
    return part.root in ("printf", "wait") and bool(assigned_names(part.root, words))


def _plain(args: Sequence[str]) -> bool:
    return not any("[" in a for a in args) and all(
        harmless_variable(name) for a in args for name in _IDENTIFIER.findall(a)
    )
