"""What a shell line will run, and how sure we are of it (SPEC P4; fail closed).

:func:`analyze` turns a command line into :class:`~agentworld.shell.split.CommandPart`
values the policy can decide on, each with an *opacity*:

* ``clear`` — we know the program and every argument that could change what runs;
* ``runs_code`` — a known program that runs code we cannot read (``python``, ``bash
  script.sh``, a shell fed on stdin, ``source``, ``trap``/``alias`` bodies …): an
  explicit rule may allow that program, but no grant covers it and a DENY rule
  "could match" it;
* ``unknown`` — we do not know which program runs (a name built by an expansion or a
  glob, ``VAR=value`` prefixes, an ``eval``/``sh -c`` of non-literal text, a builtin
  handed text that holds ``$(``), or what a known one will do: a builtin that evaluates a
  value no word shows or changes how later commands are read (``let _``, ``test -v
  'a[_]'``, ``declare -n``/``-i``, ``set -k``, ``shopt -s expand_aliases``: see
  :mod:`~agentworld.shell._builtin_state`), ``git`` after the line changed directory, a
  path under ``/proc`` (:mod:`~agentworld.shell.directories`). Only a rule for every
  shell call may allow it.

The line is first read by the strict reader (:mod:`~agentworld.shell.syntax`).
When it leaves the understood subset, the tree-sitter split
(:func:`~agentworld.shell.split.parse_command`) still names the commands it can see —
so a DENY rule keeps denying them — but every part is ``unknown`` and one more
``unknown`` part stands for whatever the split may have missed.

Wrappers (``sudo``, ``env``, ``timeout``, ``xargs``, ``find -exec``, ``ionice`` …) yield
the command they run as a part of its own — found through options known by their exact
spelling (:mod:`~agentworld.shell._wrapper_options`), and ``unknown`` when ``xargs`` feeds a
wrapper that takes its command from the input; ``bash -c``/``sh -c``/``eval``/``trap``/
``alias`` bodies are read again, ``sh`` ones in the POSIX dialect (dash reads ``&>``
differently from bash).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from agentworld.shell._builtin_state import HARMLESS_SET_O, changes_evaluation, hide_arithmetic
from agentworld.shell._test_runner_options import pytest_effects
from agentworld.shell._wrapper_options import is_wrapper, read_options
from agentworld.shell.assignments import assigned_names, harmless_variable
from agentworld.shell.directories import mark_directory_changes
from agentworld.shell.program_options import has_options_to_read, option_effects
from agentworld.shell.split import CommandPart, Opacity, UnparseableCommand, parse_command
from agentworld.shell.syntax import (
    MAX_DEPTH,
    Dialect,
    NotUnderstood,
    SimpleCommand,
    Word,
    read_commands,
)

Match = Literal["yes", "no", "maybe"]
_TOKEN_SPLIT = re.compile(r"[\s;&|()<>'\"`$=,:!{}]+")

_POSIX_SHELLS = frozenset({"sh", "dash", "ash"})
_OTHER_SHELLS = frozenset({"zsh", "ksh", "mksh", "ksh93", "fish", "csh", "tcsh", "yash", "rc"})
_SHELL_FLAGS = frozenset("ceuxvfC")  # bash/sh letters that change nothing about what runs
_SHELL_LONG = frozenset({"--norc", "--noprofile", "--noediting", "--posix"})
_SHELL_SET_O = HARMLESS_SET_O
_INTERPRETER = re.compile(
    r"(python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|deno|bun|php[0-9.]*|"
    r"lua[0-9.]*|luajit|tclsh[0-9.]*|wish[0-9.]*|Rscript|R|osascript|expect|gdb|make|gmake|"
    r"[gmn]?awk|parallel|source|\.|enable|bind|complete|compgen|fc|watch|mapfile|readarray|"
    r"shopt|"
    # Programs that read commands, some of which run a shell (`sqlite3 DB '.shell cmd'`,
    # `vim -c '!cmd'`, psql's `\!`, ed's and dc's `!`, sftp's and ftp's `!`): interpreters.
    r"sqlite3?|duckdb|psql|mysql|mariadb|n?vim|g?vimdiff|r?vi(ew)?|ex|[gre]vim|emacs|"
    r"emacsclient|ed|dc|sftp|l?ftp)"
)
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls", "-delete"})
_DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_OPENERS = re.compile(r"\$[({\[]|`")
# Bash builtins that may evaluate their arguments as arithmetic (`a[$(cmd)]` runs cmd) or
# change what later commands run.
_EVALUATING_BUILTINS = frozenset(
    ["printf", "test", "[", "let", "read", "mapfile", "readarray", "unset", "declare", "typeset", "local", "export", "readonly", "wait", "hash", "ulimit"]
)
# Commands whose arguments name what runs: handed words from xargs' input, they run those.
_RUN_THEIR_ARGUMENTS = frozenset({"find", "eval", "trap", "alias", "su", "runuser", "script", "sg"})
# Wrappers whose `-c TEXT` (or, for sg, whose command argument) is a script for `sh -c`.
_SCRIPT_OPTION = {"flock": "-c", "script": "-c", "su": "-c", "runuser": "-c", "sg": ""}


@dataclass(frozen=True, slots=True)
class ShellAnalysis:
    """Every command a line will run, and whether the whole line was understood."""

    parts: tuple[CommandPart, ...]
    understood: bool
    reason: str = ""
    """Why the line was not understood (empty when it was)."""

    @property
    def keys(self) -> frozenset[str] | None:
        """The grant keys of the line's commands, or None when a grant may not cover it."""
        if not self.understood or not self.parts:
            return None
        keys = [p.key for p in self.parts]
        if any(k is None for k in keys):
            return None
        return frozenset(k for k in keys if k is not None)

    @property
    def has_redirection(self) -> bool:
        return any(p.redirects_output for p in self.parts)


@lru_cache(maxsize=512)
def analyze(line: str) -> ShellAnalysis:
    """What ``line`` will run under ``bash --noprofile --norc -c``.

    Pure and immutable, so remembered: one call's line is read by the policy engine, by the
    grant lookup and by the approval display, and a model repeats its commands."""
    if not line.strip():
        return ShellAnalysis((), False, "empty command")
    try:
        commands = read_commands(line)
        parts = [p for c in commands for p in _parts(c, depth=0)]
    except NotUnderstood as exc:
        return _not_understood(line, str(exc))
    return ShellAnalysis(tuple(mark_directory_changes(hide_arithmetic(parts))), True)


def _not_understood(line: str, reason: str) -> ShellAnalysis:
    try:
        seen = parse_command(line).parts
    except UnparseableCommand:
        seen = ()
    hidden = CommandPart((), line.strip(), False, opacity="unknown")
    parts = [replace(p, opacity="unknown", key=None) for p in seen]
    return ShellAnalysis((*parts, hidden), False, reason)


def _parts(command: SimpleCommand, *, depth: int) -> list[CommandPart]:
    writes = any(r.writes_file for r in command.redirects)
    assignments = tuple(a.text for a in command.assignments)
    words = command.words
    targets = tuple(r.target.value for r in command.redirects)
    if not words:
        opacity: Opacity = "unknown" if assignments else "clear"
        return [CommandPart((), command.text, writes, assignments, opacity=opacity, redirect_targets=targets)]
    first, *inner = _command(words, command.text, writes, assignments, depth=depth)
    return [replace(first, redirect_targets=targets), *inner]


def _command(
    words: Sequence[Word],
    text: str,
    writes: bool,
    assignments: tuple[str, ...],
    *,
    depth: int,
    fed: bool = False,
) -> list[CommandPart]:
    """The parts of one command. ``fed``: ``xargs`` appends words read from its input, so
    options or a whole command may come from text we never see (``xargs env``)."""
    if depth > MAX_DEPTH:
        raise NotUnderstood(f"wrappers nested deeper than {MAX_DEPTH} levels")
    name = words[0].value if words[0].literal else ""
    base = posixpath.basename(name)
    inner: list[CommandPart] = []
    opacity: Opacity = "clear"
    key: str | None = name
    if not name or assignments:
        opacity = "unknown"
    elif base in _DECLARATIONS and any(_is_assignment(w) for w in words[1:]):
        opacity = "unknown"  # `export PATH=...` changes what later commands run
    elif base in _EVALUATING_BUILTINS and any(
        not w.literal or _OPENERS.search(w.value) for w in words[1:]
    ):
        opacity = "unknown"  # `printf -v 'a[$(cmd)]'`: builtins may evaluate such text
    elif not all(map(harmless_variable, assigned_names(base, words) or ())):
        opacity = "unknown"  # `read PATH`, `printf -v HOME .`: an assignment all the same
    elif changes_evaluation(base, words):
        opacity = "unknown"  # `declare -n r`, `test -v 'a[_]'`, `set -k`: see _builtin_state
    elif fed and base in _RUN_THEIR_ARGUMENTS and not (base in _POSIX_SHELLS or base == "bash"):
        opacity = "unknown"  # `xargs find .`, `xargs su`: the input may name what runs
    elif base in _POSIX_SHELLS or base == "bash":
        opacity, inner = _shell(words, "bash" if base == "bash" else "posix", writes, depth)
        opacity = "unknown" if fed and opacity != "clear" else opacity  # `xargs sh -c`
        key = f"{name} -c" if opacity == "clear" else None
    elif base.startswith("python") and [w.value for w in words[1:3]] == ["-m", "pytest"]:
        # A rule for `python -m pytest` runs the project's tests, not whatever its options say.
        hidden = any(not w.literal for w in words[1:]) or pytest_effects(words[3:]).runs_hidden_code
        opacity = "unknown" if hidden else "runs_code"
    elif base in _OTHER_SHELLS or _INTERPRETER.fullmatch(base):
        opacity = "runs_code"
    elif base == "eval":
        opacity, inner = _script(_joined(words[1:]), "bash", writes, depth)
    elif base in ("trap", "alias"):
        opacity = "runs_code"
        bodies = [w for w in words[1:] if not w.value.startswith("-")]
        if base == "alias":
            bodies = [Word(w.text, w.value.partition("=")[2], w.literal, w.start, w.end) for w in bodies]
        for body in bodies[:1] if base == "trap" else bodies:
            inner += _script(body, "bash", writes, depth)[1]
    elif base == "find" and any(not w.literal and w.value != "{}" for w in words[1:]):
        opacity = "unknown"  # `find . {-exec,sh,-c,id} ;`, `find . -de*`: words that may be actions
    elif base == "find":
        inner = _find(words, writes, depth)
        writes = writes or any(w.value in _FIND_WRITES for w in words[1:])
    elif base in _SCRIPT_OPTION:
        opacity, inner = _script_option(base, words, writes, depth, fed=fed)
    elif is_wrapper(base):
        opacity, inner, writes = _wrapped(base, words, writes, depth, fed=fed)
    elif fed and has_options_to_read(base):
        opacity = "unknown"  # `echo "-c alias.x=!rm" | xargs git`: options we cannot see
    elif (effects := option_effects(base, words)) is not None:  # git -c, sed e, sort -o …
        opacity = "unknown" if effects.runs_hidden_code else opacity
        writes = writes or effects.writes_files
    if opacity != "clear":
        key = None
    part = CommandPart(
        tuple(w.value for w in words),
        text,
        writes,
        assignments,
        literal=tuple(w.literal for w in words),
        opacity=opacity,
        key=key,
    )
    return [part, *inner]


def _is_assignment(word: Word) -> bool:
    return re.match(r"[A-Za-z_][A-Za-z0-9_]*(\[|\+?=)", word.value) is not None


def _joined(words: Sequence[Word]) -> Word | None:
    if not words:
        return None
    literal = all(w.literal for w in words)
    return Word(" ".join(w.text for w in words), " ".join(w.value for w in words), literal,
                words[0].start, words[-1].end)


def _script(
    script: Word | None, dialect: Dialect, writes: bool, depth: int
) -> tuple[Opacity, list[CommandPart]]:
    """The commands of a script handed over as one word (``bash -c``, ``eval``, ``trap``)."""
    if script is None:
        return "clear", []
    if not script.literal:
        return "unknown", []
    commands = read_commands(script.value, dialect=dialect, depth=depth + 1)
    parts = [p for c in commands for p in _parts(c, depth=depth + 1)]
    if writes:
        parts = [replace(p, redirects_output=True) for p in parts]
    return "clear", parts


def _shell(
    words: Sequence[Word], dialect: Dialect, writes: bool, depth: int
) -> tuple[Opacity, list[CommandPart]]:
    """``bash -c SCRIPT`` is read again; a shell reading a file or stdin runs code we can't see."""
    i, has_c = 1, False
    while i < len(words):
        word = words[i]
        if not word.literal:
            return "unknown", []
        tok = word.value
        if tok == "-o" or tok == "+o":
            if i + 1 >= len(words) or words[i + 1].value not in _SHELL_SET_O:
                return "runs_code", []
            i += 2
            continue
        if tok in _SHELL_LONG:
            i += 1
            continue
        if tok == "--" or tok == "-":
            i += 1
            break
        if len(tok) > 1 and tok[0] in "-+" and tok[1] != "-":
            if not set(tok[1:]) <= _SHELL_FLAGS:
                return "runs_code", []  # -i, -l, -s, -O …: startup files, stdin, shell options
            has_c = has_c or (tok[0] == "-" and "c" in tok)
            i += 1
            continue
        break
    if not has_c or i >= len(words):
        return "runs_code", []
    return _script(words[i], dialect, writes, depth)


def _script_option(
    name: str, words: Sequence[Word], writes: bool, depth: int, *, fed: bool
) -> tuple[Opacity, list[CommandPart]]:
    """``flock FILE -c TEXT``, ``su -c TEXT``, ``script -c TEXT``, ``sg GROUP TEXT``."""
    if name == "sg":  # sg GROUP [-c] TEXT
        rest = [w for w in words[2:] if w.value != "-c"]
        if not words[1:2] or not words[1].literal or any(not w.literal for w in words[2:-1]):
            return "unknown", []
        return _script(rest[0], "posix", writes, depth) if rest else ("runs_code", [])
    for i, word in enumerate(words[1:-1], start=1):
        if not word.literal:
            return "unknown", []  # `su {-c,id}`: a word that may be the option, or several
        if name != "flock" and (word.value in ("-s", "--shell") or word.value.startswith("--shell=")):
            return "unknown", []  # `su -s /usr/bin/python3 -c …`: not a shell we read
        if word.value in ("-c", "--command"):
            return _script(words[i + 1], "posix", writes, depth)
    if any(not w.literal for w in words[1:]):
        return "unknown", []
    if name == "flock":
        opacity, parts, _ = _wrapped(name, words, writes, depth, fed=fed)
        return opacity, parts
    # `su`, `runuser -u USER CMD`, `script FILE`: a shell reading its input (`su <<< 'rm x'`)
    # or a command not read as one; `script` also writes its typescript file.
    return "unknown", []


def _wrapped(
    name: str, words: Sequence[Word], writes: bool, depth: int, *, fed: bool
) -> tuple[Opacity, list[CommandPart], bool]:
    """The wrapper's opacity, the parts of the command it runs, and whether it writes a file
    itself (``time -o``). An option we do not know exactly (``env --unse``: an abbreviation
    GNU accepts) leaves the command unknown; so does a command the input supplies
    (``xargs env``, ``xargs timeout 5``: ``fed`` with nothing left to run)."""
    if name == "chroot":
        return "unknown", [], writes  # the new root's programs, or `$SHELL -i` reading input
    call = read_options(name, words)
    writes = writes or call.writes
    if call.kind == "none":
        return "clear", [], writes
    if call.kind != "command":
        return "unknown", [], writes  # an option we cannot read, or `sudo -s CMD` (a shell)
    rest = list(words[call.start :])
    if not rest:
        return ("unknown" if fed else "clear"), [], writes
    text = " ".join(w.text for w in rest)
    parts = _command(rest, text, writes, call.assignments, depth=depth + 1, fed=fed or name == "xargs")
    if call.changes_directory:
        parts = [replace(p, moved=True) for p in parts]  # `env -C /etc cat shadow`
    return "clear", parts, writes


def _find(words: Sequence[Word], writes: bool, depth: int) -> list[CommandPart]:
    """The commands of ``find … -exec CMD … ;`` (``{}`` becomes a file name: not literal);
    those of ``-execdir``/``-okdir`` run in the directory of each file found: ``moved``."""
    parts: list[CommandPart] = []
    i = 1
    while i < len(words):
        if words[i].value in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next(
                (j for j in range(i + 1, len(words)) if words[j].value in (";", "+")), len(words)
            )
            cmd = [
                Word(w.text, w.value, w.literal and "{}" not in w.value, w.start, w.end)
                for w in words[i + 1 : end]
            ]
            if cmd:
                found = _command(cmd, " ".join(w.text for w in cmd), writes, (), depth=depth + 1)
                elsewhere = words[i].value in ("-execdir", "-okdir")
                parts += [replace(p, moved=True) for p in found] if elsewhere else found
            i = end
        i += 1
    return parts


def prefix_match(part: CommandPart, words: Sequence[str], *, by_basename: bool) -> Match:
    """Whether ``part`` starts with ``words`` (a ``commandPrefix``, split), word by word.

    ``maybe`` when a word that decides it is only known at run time. The command
    name compares exactly (``ls`` is not ``./ls``, ``/usr/bin/ls`` or ``/tmp/x/ls``)
    unless ``by_basename``, which DENY rules use so ``/usr/bin/rm`` is still ``rm``.
    """
    if not words or not part.argv:
        return "no"
    for i, word in enumerate(words):
        if i >= len(part.argv):
            return "no"
        if not part.is_literal(i):
            return "maybe"
        value = part.argv[i]
        if i == 0 and by_basename and "/" not in word:
            value = posixpath.basename(value)
        if value != word:
            return "no"
    return "yes"


def mentions(part: CommandPart, name: str) -> bool:
    """Whether an argument of ``part`` names the command ``name`` (``ionice touch x``,
    ``script -c 'touch x'``): a wrapper we do not know may run it."""
    for arg in part.argv[1:]:
        # `r""m` and `r\m` inside an argument are `rm` to the shell that may run it.
        unquoted = arg.replace('"', "").replace("'", "").replace("\\", "")
        for token in (*_TOKEN_SPLIT.split(arg), *_TOKEN_SPLIT.split(unquoted)):
            if token and posixpath.basename(token) == name:
                return True
    return False
