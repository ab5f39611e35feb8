"""The values the strict reader (:mod:`~agentworld.shell.syntax`) produces: words,
redirections and simple commands, each knowing whether it is literal."""

from __future__ import annotations

from dataclasses import dataclass

_HARMLESS_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a command: its source text, and its value after quote removal.

    ``literal`` is True when the value is known before the line runs and the
    word stays exactly one word. For a non-literal word ``value`` is a best-
    effort rendering (expansions keep their source text) for display only.
    """

    text: str
    value: str
    literal: bool
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection: ``2>&1``, ``>> log``, ``< in``, ``<<< word`` …"""

    operator: str
    target: Word
    fd: str = ""

    @property
    def writes_file(self) -> bool:
        """Whether it may open a file for writing (descriptor copies and the null sinks do not)."""
        target, op = self.target, self.operator
        if op == "<<<":
            return False  # a here-string is text on standard input
        if op in ("<&", ">&") and _copies_descriptor(target):
            return False
        if op in ("<", "<&"):
            return _network_path(target)
        return not (target.literal and target.value in _HARMLESS_SINKS)


def _copies_descriptor(target: Word) -> bool:
    return target.literal and (target.value.rstrip("-").isdigit() or target.value == "-")


def _network_path(target: Word) -> bool:
    """Bash itself opens ``/dev/tcp/host/port``: reading one still talks to the network."""
    return not target.literal or target.value.startswith(("/dev/tcp/", "/dev/udp/"))


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command: its ``NAME=value`` prefixes, words and redirections.

    ``redirects`` include those of every enclosing subshell, which apply to it
    too; ``depth`` counts the subshells and substitutions around it.
    """

    assignments: tuple[Word, ...]
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]
    text: str
    depth: int
