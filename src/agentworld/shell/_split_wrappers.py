"""Where the command a wrapper runs starts among its words (for :mod:`~agentworld.shell.split`).

``sudo -u root rm x`` runs ``rm x``, ``bash -c 'ls; rm x'`` runs a script and
``find . -exec rm {} ;`` runs ``rm {}``. These pure functions find those words in
an argv; the split parses and unwraps what they find.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Commands that run the command in their arguments -> their options that take a value.
WRAPPERS = {
    "sudo": "-u -g -C -D -h -p -r -t -T -U --user --group --chdir --host --prompt --role --type",
    "doas": "-u -C",
    "env": "-u -C -S -P --unset --chdir --split-string",
    "xargs": "-I -L -n -P -s -E -d -a --max-args --max-procs --max-chars --delimiter --arg-file",
    "exec": "-a",
    "timeout": "-s -k --signal --kill-after",
    "nice": "-n --adjustment",
    "stdbuf": "-i -o -e --input --output --error",
    "chroot": "--userspec --groups",
    "watch": "-n -q --interval --equexit",
    **dict.fromkeys(("nohup", "command", "builtin", "time", "setsid", "busybox", "coproc"), ""),
}
_POSITIONAL = {"timeout": 1, "chroot": 1}  # arguments between a wrapper's options and its command
_TAKES_ASSIGNMENTS = {"sudo", "doas", "env"}
_FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}


def shell_script(argv: tuple[str, ...]) -> str | None:
    """The script of ``bash -c SCRIPT``, or None when the shell reads a file or stdin."""
    has_c, i = False, 1
    while i < len(argv):
        tok = argv[i]
        if tok in ("-", "--"):
            i += 1
            break
        if tok.startswith("--"):
            i += 2 if tok in ("--rcfile", "--init-file") else 1
        elif len(tok) > 1 and tok[0] in "-+":
            has_c = has_c or (tok[0] == "-" and "c" in tok)
            i += 2 if ("o" in tok or "O" in tok) else 1
        else:
            break
    return argv[i] if has_c and i < len(argv) else None


def skip_options(name: str, argv: tuple[str, ...]) -> tuple[int, str | None]:
    """Index of the wrapped command in ``argv``, and the value of ``env -S`` if given."""
    takes_value = WRAPPERS[name].split()
    split_string: str | None = None
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        tok, value = argv[i], None
        i += 1
        if tok == "--":
            break
        if tok.startswith("--"):
            opt, eq, value = tok.partition("=")
            if not eq and opt in takes_value and i < len(argv):
                value, i = argv[i], i + 1
        else:
            opt = tok
            for j, ch in enumerate(tok[1:], start=2):
                if f"-{ch}" in takes_value:
                    opt, value = f"-{ch}", tok[j:]
                    if not value and i < len(argv):
                        value, i = argv[i], i + 1
                    break
        if name == "env" and opt in ("-S", "--split-string") and value is not None:
            split_string = value
    while name in _TAKES_ASSIGNMENTS and i < len(argv) and _ASSIGNMENT.match(argv[i]):
        i += 1
    return i + _POSITIONAL.get(name, 0), split_string


def find_commands(argv: tuple[str, ...]) -> Iterator[tuple[int, int]]:
    """The ``[start, end)`` ranges of the commands in ``find ... -exec CMD ... ;``."""
    i = 1
    while i < len(argv):
        if argv[i] in _FIND_EXEC:
            end = next((j for j in range(i + 1, len(argv)) if argv[j] in (";", "+")), len(argv))
            yield i + 1, end
            i = end
        i += 1
