"""Command-line flags whose next word (or attached value) is a secret: ``--password x``,
``mysql -pX``, ``docker login -p X``, ``curl -u user:pw``, ``curl -b a=b``; found by a small
tokenizer that knows words and simple quotes, and also reads quoted command lines (``ssh host
'…'``, ``bash -c "…"``) inside them.

A short flag is a password only for the programs where it means one (``_PASSWORD_FLAGS``):
``-p`` is a port to ``ssh``, a parent to ``mkdir``, a patch to ``git log`` and a port mapping to
``docker run``, and those stay readable. The registry clients (``docker``, ``podman``, ``helm``
…) take ``-p PASSWORD`` only in their login command (``_LOGIN_COMMANDS``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

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
_FLAG_HINT = re.compile(
    r"curl|mysql|mariadb|sshpass|mongo|redis-cli|7z|sqlcmd|openssl|keytool|--[a-z0-9_-]++"
)
# Words common in output (an auth log's "login", a listing's "a.zip") are hints only with what
# makes them a password flag's command, in the same command; each is looked for only when its
# word is in the text at all.
_WORD_HINTS = (
    (
        "login",
        re.compile(
            r"(?:docker|podman|nerdctl|buildah|skopeo|oras|helm|crane|az|cf)\b[^\n;&|()]*\blogin\b"
        ),
    ),
    ("zip", re.compile(r"(?:unzip|zipcloak|zip)\s[^\n;&|()]*-p")),
    ("ldap", re.compile(r"ldap[a-z]*\s[^\n;&|()]*-w")),
)
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


@dataclass(frozen=True, slots=True)
class _Flag:
    """A flag whose value is a password: attached (``-pX``, when ``glued``) or the next word
    (when ``spaced``); the secret starts after ``prefix`` in the value (openssl's ``pass:``),
    and a value without that prefix names no secret (``env:VAR``, ``file:path``)."""

    word: str
    glued: bool = True
    spaced: bool = True
    prefix: str = ""


def _programs(names: str, *flags: _Flag) -> dict[str, tuple[_Flag, ...]]:
    return dict.fromkeys(names.split(), flags)


_OPENSSL_PASS = ("-pass", "-passin", "-passout", "-password", "-srcpass", "-kdfpass")
_KEYTOOL_PASS = ("-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass",
                 "-destkeypass", "-new")
_PASSWORD_FLAGS: Final[Mapping[str, tuple[_Flag, ...]]] = {
    **_programs(
        "mysql mariadb mysqldump mysqladmin mysqlimport mysqlcheck mysqlshow mysqlpump "
        "mariadb-dump mariadb-admin mariadb-import mariadb-check sshpass "
        "mongo mongosh mongodump mongorestore mongoexport mongoimport mongostat mongotop",
        _Flag("-p"),
    ),
    **_programs("redis-cli", _Flag("-a")),
    **_programs(
        "ldapsearch ldapmodify ldapadd ldapdelete ldapwhoami ldappasswd ldapcompare ldapmodrdn "
        "ldapexop",
        _Flag("-w"),
    ),
    **_programs("zip unzip zipcloak", _Flag("-P")),
    **_programs("7z 7za 7zr 7zz", _Flag("-p", spaced=False)),  # a bare -p asks for one
    **_programs("sqlcmd", _Flag("-P")),
    **_programs(
        "openssl",
        *(_Flag(word, glued=False, prefix="pass:") for word in _OPENSSL_PASS),
        _Flag("-k", glued=False),
    ),
    **_programs("keytool", *(_Flag(word, glued=False) for word in _KEYTOOL_PASS)),
}
"""Programs whose short (or single-dash) flags carry a password wherever they appear."""

_LOGIN_COMMANDS: Final[Mapping[str, frozenset[tuple[str, ...]]]] = {
    **dict.fromkeys(
        ("docker", "podman", "nerdctl", "buildah", "skopeo", "oras", "cf"), frozenset({("login",)})
    ),
    "helm": frozenset({("registry", "login")}),
    "crane": frozenset({("auth", "login")}),
    "az": frozenset({("login",), ("acr", "login")}),
}
"""Programs whose ``-p`` is a password in these subcommands only (``docker login -p X``, not
``docker run -p 8080:80``)."""
_LOGIN_PASSWORD = (_Flag("-p"),)

_CONTEXT_COMMANDS = frozenset(_PASSWORD_FLAGS) | {"curl"}


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
    for word, pattern in _WORD_HINTS:
        if low.find(word, lo, hi) != -1:
            hints += [hint.start() for hint in pattern.finditer(low, lo, hi)]
    if not hints:
        return
    hints.sort()
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


_Found = tuple[str, int | None, str]
"""A flag's kind of secret, where its value starts inside the flag's word (None: the value is
the next word), and the prefix the value must start with."""


def _password_flag(word: str, flags: Iterable[_Flag]) -> _Found | None:
    for flag in flags:
        if word == flag.word:
            return ("password", None, flag.prefix) if flag.spaced else None
        if flag.glued and word.startswith(flag.word):
            return "password", len(flag.word), flag.prefix
    return None


def _value_flag(word: str, commands: set[str]) -> _Found | None:
    """What secret the flag ``word`` announces (see ``_Found``). ``commands`` are the names of
    the programs before it (and ``login`` programs whose login command it is in)."""
    curl = "curl" in commands
    if word.startswith("--"):
        name, eq, _ = word[2:].partition("=")
        offset = len(name) + 3 if eq else None
        if curl and name in ("user", "cookie"):
            return ("userinfo" if name == "user" else "cookie"), offset, ""
        kind = secret_kind(name)
        return (kind, offset, "") if kind and kind != "cookie" else None
    for program in commands:
        flags = _LOGIN_PASSWORD if program in _LOGIN_COMMANDS else _PASSWORD_FLAGS.get(program, ())
        if (found := _password_flag(word, flags)) is not None:
            return found
    offset = 2 if len(word) > 2 else None
    if curl and word.startswith("-u"):
        return "userinfo", offset, ""
    if curl and word.startswith("-b"):
        return "cookie", offset, ""
    return None


class _LoginPath:
    """Whether the words after a registry client (``docker``, ``helm`` …) name its login
    command: each word that is not an option either continues a login path (``registry``,
    ``login``), or, after an option, may be that option's value (``docker -H x login``), or
    else is another command (``docker run``), which ends the watch."""

    def __init__(self, program: str) -> None:
        self.program = program
        self._paths = _LOGIN_COMMANDS[program]
        self._seen: tuple[str, ...] = ()
        self.done = False

    def word(self, word: str, *, after_option: bool) -> bool:
        """Read the next non-option word; True when the login command is complete."""
        seen = (*self._seen, word)
        if any(path[: len(seen)] == seen for path in self._paths):
            self._seen = seen
            self.done = seen in self._paths
            return self.done
        if not after_option:
            self.done = True  # another command: its -p is no password
        return False


def flag_values(words: Sequence[str]) -> Iterator[tuple[int, int, int, str]]:
    """Secret values announced by flags in one simple command: (word index, start, end, kind),
    positions inside that word's value."""
    commands: set[str] = set()
    login: _LoginPath | None = None
    for i, word in enumerate(words):
        if not word.startswith("-"):
            after_option = i > 0 and words[i - 1].startswith("-")
            if login is not None and not login.done and login.word(word, after_option=after_option):
                commands.add(login.program)
            elif (name := word[word.rfind("/") + 1 :]) in _CONTEXT_COMMANDS:
                commands.add(name)
            elif name in _LOGIN_COMMANDS:
                login = _LoginPath(name)
            continue
        if (flag := _value_flag(word, commands)) is None:
            continue
        kind, offset, prefix = flag
        if offset is not None:
            index, lo = i, offset
        elif i + 1 < len(words) and words[i + 1] and not words[i + 1].startswith("-"):
            index, lo = i + 1, 0
        else:
            continue
        value = words[index]
        if prefix:
            if not value.startswith(prefix, lo):
                continue
            lo += len(prefix)
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
