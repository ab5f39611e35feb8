"""Command-line flags whose next word (or attached value) is a secret: ``--password x``,
``mysql -pX``, ``curl -u user:pw``, ``curl -b a=b``; found by a small tokenizer that
knows words and simple quotes, and also reads quoted command lines (``ssh host '…'``,
``bash -c "…"``) inside them."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from agentworld.redaction._names import secret_kind
from agentworld.redaction._shapes import cookie_values
from agentworld.redaction._spans import SecretSpan

_QUOTED = r"'[^']*'|\"[^\"\\]*(?:\\.[^\"\\]*)*\""
# A simple command: everything up to a newline or ``;&|()`` outside quotes. A quote that is
# never closed counts as a character.
_SIMPLE_COMMAND = re.compile(
    rf"(?:{_QUOTED}|\\.|[<>][<>&|-]*|[^\n;&|()<>'\"\\]+|['\"])+", re.DOTALL
)
_SHELL_WORD = re.compile(
    r"(?P<continuation>\\\n)"
    # A redirection is kept as a word of its own, so that ``-p < dump.sql`` or ``-p 2>&1``
    # never makes the file name or the ``2`` the value of ``-p``.
    r"|(?P<redirect>[0-9]*[<>][<>&|-]*[0-9]*)"
    rf"|(?P<word>(?:{_QUOTED}|\\[^\n]|[^\s<>'\"\\]+|['\"])+)",
    re.DOTALL,
)
# Commands without any of these have no flag that announces a secret: they are not split
# into words at all, which keeps long outputs and scripts cheap. Runs over the lower-cased text.
_FLAG_HINT = re.compile(r"curl|mysql|mariadb|sshpass|--[a-z0-9_-]++")
_WORD_PART = re.compile(
    r"'(?P<single>[^']*)'"
    r"|\"(?P<double>[^\"\\]*(?:\\.[^\"\\]*)*)\""
    r"|\\(?P<escape>.)"
    r"|(?P<bare>[^'\"\\]+)"
    r"|(?P<stray>.)",  # a quote that is never closed
    re.DOTALL,
)
_QUOTING = re.compile(r"['\"\\]")
_EXPANSION = re.compile(r"[$`\\]")
_SPACE = re.compile(r"\s")
_NESTED_DEPTH = 2  # ssh host 'mysql -pX', bash -c "curl -u a:b …"
_PASSWORD_P_COMMANDS = frozenset({"mysql", "mariadb", "mysqldump", "mysqladmin", "sshpass"})
_CONTEXT_COMMANDS = _PASSWORD_P_COMMANDS | {"curl"}


@dataclass(frozen=True, slots=True)
class _Part:
    """A piece of a shell word; ``literal`` when ``text[start:end]`` is exactly its value."""

    start: int
    end: int
    literal: bool


def _word_parts(text: str, start: int, end: int) -> list[_Part]:
    """The quoted, escaped and bare pieces of the shell word ``text[start:end]``."""
    if not _QUOTING.search(text, start, end):
        return [_Part(start, end, True)]
    parts = []
    for m in _WORD_PART.finditer(text, start, end):
        kind = m.lastgroup or "stray"
        s, e = m.span(kind)
        # Inside double quotes, ``$``, backticks and backslashes make the value differ.
        expands = kind == "double" and _EXPANSION.search(text, s, e) is not None
        parts.append(_Part(s, e, kind in ("single", "bare", "double") and not expands))
    return parts


def _word_source(parts: list[_Part], lo: int, hi: int) -> tuple[int, int] | None:
    """Where ``value[lo:hi]`` of a word is in the text, when it lies inside one literal part."""
    offset = 0
    for part in parts:
        length = part.end - part.start
        if part.literal and offset <= lo and hi <= offset + length:
            return part.start + lo - offset, part.start + hi - offset
        offset += length
    return None


_Command = tuple[list[tuple[int, int]], list[str]]


def _commands(text: str, low: str, lo: int, hi: int, depth: int = 0) -> Iterator[_Command]:
    """The simple commands of ``text[lo:hi]`` that may hold a secret flag, each as its words'
    spans and values; then those of quoted strings with spaces in them (command lines that
    ``ssh`` or ``bash -c`` run)."""
    hints = [
        hint.start()
        for hint in _FLAG_HINT.finditer(low, lo, hi)
        if hint[0][0] != "-" or secret_kind(hint[0][2:])
    ]
    if not hints:
        return
    ahead = 0  # hints[ahead] is the first hint not before the current command
    for command in _SIMPLE_COMMAND.finditer(text, lo, hi):
        while ahead < len(hints) and hints[ahead] < command.start():
            ahead += 1
        if ahead == len(hints):
            return
        if hints[ahead] >= command.end():
            continue
        spans: list[tuple[int, int]] = []
        values: list[str] = []
        for m in _SHELL_WORD.finditer(text, command.start(), command.end()):
            if m.lastgroup == "continuation":
                continue
            spans.append(m.span())
            if not _QUOTING.search(m[0]):
                values.append(m[0])
                continue
            parts = _word_parts(text, m.start(), m.end())
            values.append("".join(text[p.start : p.end] for p in parts))
            if depth == _NESTED_DEPTH:
                continue
            for part in parts:
                if part.literal and _SPACE.search(text, part.start, part.end):
                    yield from _commands(text, low, part.start, part.end, depth + 1)
        yield spans, values


def _value_flag(word: str, commands: set[str]) -> tuple[str, int | None] | None:
    """What secret the flag ``word`` announces, and where its value starts inside ``word``
    (None: the value is the next word). ``commands`` are the command names before it."""
    curl = "curl" in commands
    if word.startswith("--"):
        name, eq, _ = word[2:].partition("=")
        offset = len(name) + 3 if eq else None
        if curl and name in ("user", "cookie"):
            return ("userinfo" if name == "user" else "cookie"), offset
        kind = secret_kind(name)
        return (kind, offset) if kind and kind != "cookie" else None
    offset = 2 if len(word) > 2 else None
    if word.startswith("-p") and commands & _PASSWORD_P_COMMANDS:
        return "password", offset
    if curl and word.startswith("-u"):
        return "userinfo", offset
    if curl and word.startswith("-b"):
        return "cookie", offset
    return None


def flag_values(words: Sequence[str]) -> Iterator[tuple[int, int, int, str]]:
    """Secret values announced by flags in one simple command: (word index, start, end, kind),
    positions inside that word's value."""
    commands: set[str] = set()
    for i, word in enumerate(words):
        if not word.startswith("-"):
            if (name := word[word.rfind("/") + 1 :]) in _CONTEXT_COMMANDS:
                commands.add(name)
            continue
        if (flag := _value_flag(word, commands)) is None:
            continue
        kind, offset = flag
        if offset is not None:
            index, lo = i, offset
        elif i + 1 < len(words) and words[i + 1] and not words[i + 1].startswith("-"):
            index, lo = i + 1, 0
        else:
            continue
        value = words[index]
        if kind == "userinfo":
            colon = value.find(":", lo)
            if colon != -1:
                yield index, colon + 1, len(value), "password"
        elif kind == "cookie":
            if "=" in value[lo:]:  # else it names a cookie file
                for start, end in cookie_values(value, lo, len(value)):
                    yield index, start, end, "cookie"
        else:
            yield index, lo, len(value), kind


def command_spans(text: str, low: str) -> Iterator[SecretSpan]:
    for spans, values in _commands(text, low, 0, len(text)):
        for index, lo, hi, kind in flag_values(values):
            where = _word_source(_word_parts(text, *spans[index]), lo, hi)
            if where is not None:
                yield SecretSpan(*where, kind)
