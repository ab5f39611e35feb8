"""Secret redaction for what a person approves and what logs record (SPEC A9).

A masked value reads ``[REDACTED:<kind>]``. Redaction may hide a secret VALUE,
but it must never hide or rewrite shell syntax: when a prompt shows
``echo '[REDACTED]'`` while ``; touch R;`` ran in between, the person approved
a command they never saw. So every span this module masks consists only of
characters that are not shell syntax (no whitespace, quotes, ``$``, backticks,
backslashes, ``;&|()<>{}#*?[]``); a candidate value that contains any of them
(``$(cat f)``, a backtick) is code, not a secret, and stays visible.

The nets, all pure functions over text (no I/O, no ``os.environ``):

- known secret shapes: provider keys (``sk-…``, ``ghp_…``, ``AKIA…`` …), JWTs,
  passwords in URLs, ``Authorization`` and ``Cookie`` headers, the base64 body
  lines of private-key blocks (never the text between the markers);
- ``key=value`` / ``key: value`` pairs whose key names a secret, in free text,
  env dumps and JSON;
- command-line flags whose next word (or attached value) is a secret
  (``--password x``, ``mysql -pX``, ``curl -u user:pw``, ``curl -b a=b``),
  found by a small tokenizer that knows words and simple quotes;
- values the caller knows are secret (``known``, e.g. from
  :func:`secret_env_values`).

:func:`redact` applies this to JSON-like data and masks whole values under
secret-named keys.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

REDACTED = "[REDACTED]"
"""The old, kind-less mask; masks now read ``[REDACTED:<kind>]``."""

KNOWN_MIN_LENGTH = 6
"""Shorter known values are not masked: hiding every ``true`` or ``1234`` would garble output."""

PROVIDER_KEY_NAMES = frozenset({
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "XAI_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "GITHUB_TOKEN",
})


@dataclass(frozen=True, slots=True)
class SecretSpan:
    """``text[start:end]`` is a secret of this kind: ``password``, ``api_key``, an env name …"""

    start: int
    end: int
    kind: str


# Characters that may never be inside a masked span: shell syntax and control characters.
_SYNTAX = r"\s'\"$`\\;&|()<>{}#*?\[\]\x00-\x1f\x7f"
_UNCLEAN = re.compile(f"[{_SYNTAX}]")
_CLEAN_RUN = re.compile(f"[^{_SYNTAX}=][^{_SYNTAX}]*")


def _is_clean(text: str, start: int, end: int) -> bool:
    # A leading "=" belongs to the ``key=value`` around the value, never to the mask.
    return start < end and text[start] != "=" and _UNCLEAN.search(text, start, end) is None


# --- secret names ---------------------------------------------------------------------------

# A name is secret when, letters and digits only, it ENDS with one of these: ``db_password``,
# ``x-api-key`` and ``csrftoken`` are; ``max_tokens``, ``token_type``, ``password_file`` and
# ``--password-stdin`` are not.
_SECRET_SUFFIXES = {
    "password": "password",
    "passwd": "password",
    "passphrase": "password",
    "secret": "secret",
    "token": "token",
    "apikey": "api_key",
    "accesskey": "api_key",
    "secretkey": "api_key",
    "privatekey": "private_key",
    "authorization": "authorization",
    "cookie": "cookie",
    "credential": "credential",
    "credentials": "credential",
    "sessionid": "session",
}
_SECRET_SUFFIX = re.compile(f"(?:{'|'.join(_SECRET_SUFFIXES)})$")
_NON_ALNUM = re.compile(r"[^a-z0-9]")
# Pagination cursors (``nextPageToken``, AWS ``NextToken``) are not secrets; the model needs them.
_CURSOR_NAMES = ("pagetoken", "nexttoken", "continuationtoken")
# ``pwd`` and ``pass`` only as a separate last word: ``MYSQL_PWD``, ``db_pass``; not ``PWD``.
_SHORT_PASSWORD_NAME = re.compile(r"(?i)[_.-](?:pwd|pass)$")
_ENV_SECRET_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


@functools.lru_cache(maxsize=4096)  # the same few names come back in every call
def _secret_kind(name: str) -> str | None:
    flat = _NON_ALNUM.sub("", name.lower())
    if flat.endswith(_CURSOR_NAMES):
        return None
    if m := _SECRET_SUFFIX.search(flat):
        return _SECRET_SUFFIXES[m[0]]
    if _SHORT_PASSWORD_NAME.search(name):
        return "password"
    # ``STRIPE_KEY`` in an env dump is a secret; a lower-case ``sort_key`` in JSON is not.
    if name.isupper() and (name == "KEY" or name.endswith("_KEY")):
        return "api_key"
    return None


def is_secret_key(key: str) -> bool:
    """Whether a dict key or variable name says its value is a secret: ``api_key``, ``token`` …"""
    return _secret_kind(key) is not None


def secret_env_values(environ: Mapping[str, str]) -> dict[str, str]:
    """Name -> value for each secret-named variable of ``environ`` whose value has at least
    ``KNOWN_MIN_LENGTH`` characters; pass the result as ``known`` to mask those values in
    tool output, where no key names them any more."""
    found: dict[str, str] = {}
    for name, value in environ.items():
        upper = name.upper()
        secret = (
            upper in PROVIDER_KEY_NAMES
            or upper.endswith("KEY")
            or any(part in upper for part in _ENV_SECRET_PARTS)
            or is_secret_key(name)
        )
        if secret and len(value) >= KNOWN_MIN_LENGTH:
            found[name] = value
    return found


# --- secrets recognised by their shape --------------------------------------------------------
#
# Every pattern starts with literal text so that the regex engine can skip ahead to it; the
# check that a match starts a word is done in Python. Case-insensitive patterns run over an
# ASCII-lower-cased copy of the text, which has the same positions.

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_WORD_CHARS = frozenset(string.ascii_letters + string.digits + "_-")
_KEY_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")

_TOKEN_SHAPES = [
    (re.compile(pattern), kind)
    for pattern, kind in (
        (r"sk-[A-Za-z0-9_-]{20,}", "api_key"),  # OpenAI sk-, sk-proj-; Anthropic sk-ant-
        (r"sk_(?:live|test)_[A-Za-z0-9]{16,}", "api_key"),  # Stripe
        (r"rk_(?:live|test)_[A-Za-z0-9]{16,}", "api_key"),
        (r"AIza[A-Za-z0-9_-]{30,}", "api_key"),  # Google
        (r"gh[pousr]_[A-Za-z0-9]{20,}", "token"),  # GitHub
        (r"github_pat_[A-Za-z0-9_]{20,}", "token"),
        (r"glpat-[A-Za-z0-9_-]{20,}", "token"),  # GitLab
        (r"xox[abposr]-[A-Za-z0-9-]{10,}", "token"),  # Slack
        (r"npm_[A-Za-z0-9]{30,}", "token"),
        (r"hf_[A-Za-z0-9]{30,}", "token"),  # Hugging Face
        (r"A(?:KIA|SIA)[A-Z0-9]{16}(?![A-Za-z0-9])", "aws_key"),
        (r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", "jwt"),
    )
]
_URL_PASSWORD = re.compile(r"://[^\s:/@'\"]*:(?P<v>[^\s/@'\"]+)@")
# These run over the lower-cased text.
_BEARER = re.compile(r"bearer[ \t]+(?P<v>[a-z0-9._~+/-]{16,}=*)")
_AUTHORIZATION = re.compile(
    r"authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
    r"(?:(?P<scheme>[a-z][\w-]*)[ \t]+)?(?P<v>[^\s\"'\\,;]+)"
)
_AUTH_SCHEMES = {None: "authorization", "bearer": "bearer", "basic": "basic_auth", "token": "token"}
_COOKIE_HEADER = re.compile(r"cookie\\?[\"']?[ \t]*:[ \t]*\\?[\"']?")
_COOKIE_PAIR = re.compile(r"[ \t]*[^=;\s\"',]+=(?P<v>[^;\s\"',]*)")


def _starts_word(text: str, at: int) -> bool:
    return at == 0 or text[at - 1] not in _WORD_CHARS


def _shape_spans(text: str, low: str) -> Iterator[SecretSpan]:
    for pattern, kind in _TOKEN_SHAPES:
        for m in pattern.finditer(text):
            if _starts_word(text, m.start()):
                yield SecretSpan(m.start(), m.end(), kind)
    for m in _URL_PASSWORD.finditer(text):
        yield SecretSpan(m.start("v"), m.end("v"), "url_password")
    for m in _BEARER.finditer(low):
        if _starts_word(low, m.start()):
            yield SecretSpan(m.start("v"), m.end("v"), "bearer")
    for m in _AUTHORIZATION.finditer(low):
        scheme = m["scheme"]
        if _starts_word(low, m.start()) and scheme in _AUTH_SCHEMES and m["v"] not in _AUTH_SCHEMES:
            yield SecretSpan(m.start("v"), m.end("v"), _AUTH_SCHEMES[scheme])
    for m in _COOKIE_HEADER.finditer(low):
        set_cookie = low.endswith("set-", 0, m.start())
        if set_cookie or _starts_word(low, m.start()):
            for start, end in _cookie_values(text, m.end(), len(text), first_only=set_cookie):
                yield SecretSpan(start, end, "cookie")


def _cookie_values(
    text: str, pos: int, end: int, *, first_only: bool = False
) -> Iterator[tuple[int, int]]:
    """The values of the ``name=value; …`` pairs at ``pos``: a Cookie header, ``curl -b``."""
    while m := _COOKIE_PAIR.match(text, pos, end):
        if m.start("v") < m.end("v"):
            yield m.start("v"), m.end("v")
        pos = m.end()
        if first_only or not text.startswith(";", pos, end):
            return
        pos += 1


_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*-----")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")
_UPPER, _LOWER = re.compile(r"[A-Z]"), re.compile(r"[a-z]")


def _private_key_spans(text: str) -> Iterator[SecretSpan]:
    """The base64 body lines of private-key blocks, one span per line.

    Only runs that stand alone between whitespace, quotes, literal ``\\n`` escapes or the
    markers, and mix upper and lower case like base64 does, count: whatever else lies
    between the markers (``'; touch R; echo '``) is left as it is.
    """
    pos = 0
    while begin := _PEM_BEGIN.search(text, pos):
        end = _PEM_END.search(text, begin.end())
        stop = end.start() if end else len(text)
        for run in _BASE64_RUN.finditer(text, begin.end(), stop):
            start = run.start()
            escaped = text[start] == "n" and text[start - 1] == "\\"  # "\n" between the lines
            start += escaped
            before = text[start - 1]
            after = text[run.end()] if run.end() < len(text) else ""
            if (
                run.end() - start >= 16
                and (escaped or start == begin.end() or before.isspace() or before in "'\"")
                and (run.end() == stop or not after or after.isspace() or after in "'\"\\")
                and _UPPER.search(text, start, run.end())
                and _LOWER.search(text, start, run.end())
            ):
                yield SecretSpan(start, run.end(), "private_key")
        pos = end.end() if end else len(text)


# --- key=value pairs ----------------------------------------------------------------------------

# The last word of a secret name (``key`` for ``api_key``, ``id`` for ``session_id``), then ``=``
# or ``:``; runs over the lower-cased text. The whole name, found by scanning back, must then
# pass ``_secret_kind``.
_PAIR_NAME_END = re.compile(
    r"(?P<tail>pass(?:word|wd|phrase)?|pwd|secret|token|key|authorization|cookie|credentials?|id)"
    r"(?:\\?[\"'])?[ \t]*(?P<sep>[:=])(?P<gap>[ \t]*)"
)
_VALUE_CHAR = r"[^\s;&|<>),}\]='\"]"
_VALUE_END = r"(?:[\s;&|<>),}\]]|$)"
_PAIR_VALUE = re.compile(
    r"\\?\"(?P<dq>[^\"\\\n]*)\\?\"(?!\w)|'(?P<sq>[^'\n]*)'(?!\w)"
    # A bare value may end in base64 padding and a closing quote; a value that goes on after
    # an "=" or a quote (``pw=a=b``, ``pw=abc"def"``) is not simple and is left alone.
    rf"|(?P<bare>{_VALUE_CHAR}++=*+)(?={_VALUE_END}|[\"']{_VALUE_END})"
)
_NOT_A_VALUE = frozenset({"null", "none", "true", "false"})
_MAX_NAME = 128


def _pair_spans(text: str, low: str) -> Iterator[SecretSpan]:
    """Values of ``name=value``, ``name: value`` and ``"name": "value"`` with a secret name."""
    for m in _PAIR_NAME_END.finditer(low):
        start, floor = m.start(), max(0, m.start() - _MAX_NAME)
        while start > floor and text[start - 1] in _KEY_CHARS:
            start -= 1
        kind = _secret_kind(text[start : m.end("tail")])
        if kind is None or kind in ("authorization", "cookie"):
            continue  # headers have their own parsers above
        if text.endswith("$", 0, start) or text.endswith("${", 0, start):
            continue  # a variable reference (``$password:…``, ``${password:-x}``), not a pair
        value = _PAIR_VALUE.match(text, m.end())
        if value is None:
            continue
        group = next(g for g in ("dq", "sq", "bare") if value[g] is not None)
        if group == "bare" and m["sep"] == ":" and not m["gap"]:
            continue  # ``user:pw@host``, ``image:tag``: a colon without a space joins, not pairs
        if value[group].lower() not in _NOT_A_VALUE:
            yield SecretSpan(value.start(group), value.end(group), kind)


# --- command lines ------------------------------------------------------------------------------

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
        if hint[0][0] != "-" or _secret_kind(hint[0][2:])
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
        kind = _secret_kind(name)
        return (kind, offset) if kind and kind != "cookie" else None
    offset = 2 if len(word) > 2 else None
    if word.startswith("-p") and commands & _PASSWORD_P_COMMANDS:
        return "password", offset
    if curl and word.startswith("-u"):
        return "userinfo", offset
    if curl and word.startswith("-b"):
        return "cookie", offset
    return None


def _flag_values(words: Sequence[str]) -> Iterator[tuple[int, int, int, str]]:
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
                for start, end in _cookie_values(value, lo, len(value)):
                    yield index, start, end, "cookie"
        else:
            yield index, lo, len(value), kind


def _command_spans(text: str, low: str) -> Iterator[SecretSpan]:
    for spans, values in _commands(text, low, 0, len(text)):
        for index, lo, hi, kind in _flag_values(values):
            where = _word_source(_word_parts(text, *spans[index]), lo, hi)
            if where is not None:
                yield SecretSpan(*where, kind)


# --- assembling -----------------------------------------------------------------------------------


def _known_spans(text: str, known: Mapping[str, str] | None) -> Iterator[SecretSpan]:
    """Every occurrence of a known secret value; a value with shell-syntax characters in it
    (``p@ss word``) is masked piecewise, around them."""
    for name, value in (known or {}).items():
        if len(value) < KNOWN_MIN_LENGTH:
            continue
        at = text.find(value)
        while at != -1:
            for run in _CLEAN_RUN.finditer(text, at, at + len(value)):
                yield SecretSpan(run.start(), run.end(), name)
            at = text.find(value, at + 1)


def _resolve(text: str, candidates: Iterable[SecretSpan]) -> list[SecretSpan]:
    """Clean candidates, sorted, overlapping ones merged (the first found names the kind)."""
    spans: list[SecretSpan] = []
    clean = (s for s in candidates if _is_clean(text, s.start, s.end))
    for span in sorted(clean, key=lambda s: s.start):
        if spans and span.start < spans[-1].end:
            if span.end > spans[-1].end:
                spans[-1] = SecretSpan(spans[-1].start, span.end, spans[-1].kind)
        else:
            spans.append(span)
    return spans


def find_secrets(text: str, *, known: Mapping[str, str] | None = None) -> list[SecretSpan]:
    """Sorted, non-overlapping spans of secret values in free text or a shell command line.

    ``known`` maps a name (an env var name such as ``OPENAI_API_KEY``) to a secret value,
    masked wherever it appears with that name as kind; values shorter than
    ``KNOWN_MIN_LENGTH`` are ignored. No span ever contains a shell-syntax character.
    """
    low = text.translate(_ASCII_LOWER)

    def candidates() -> Iterator[SecretSpan]:
        yield from _known_spans(text, known)
        yield from _shape_spans(text, low)
        yield from _private_key_spans(text)
        yield from _pair_spans(text, low)
        yield from _command_spans(text, low)

    return _resolve(text, candidates())


def mask(text: str, spans: Sequence[SecretSpan]) -> str:
    """``text`` with each span replaced by ``[REDACTED:<kind>]``; everything else unchanged."""
    pieces: list[str] = []
    pos = 0
    for span in sorted(spans, key=lambda s: s.start):
        if not pos <= span.start < span.end <= len(text):
            raise ValueError(f"spans must be non-empty, inside the text and not overlap: {span}")
        pieces += [text[pos : span.start], f"[REDACTED:{span.kind}]"]
        pos = span.end
    pieces.append(text[pos:])
    return "".join(pieces)


def redact_text(text: str, *, known: Mapping[str, str] | None = None) -> str:
    """``text`` with its secret values masked (see :func:`find_secrets`)."""
    return mask(text, find_secrets(text, known=known))


def redact(value: Any, *, known: Mapping[str, str] | None = None) -> Any:
    """A copy of JSON-like ``value`` safe to show and store.

    Non-empty strings and numbers under secret-named keys (``api_key``, ``password``,
    ``authorization`` …, at any depth) become ``[REDACTED:<kind>]`` whole; every other
    string goes through :func:`redact_text`, and a list of strings is also read as the
    words of one command (``["--token", "abc"]``). Keys are never changed.
    """
    if isinstance(value, dict):
        return {key: _redact_entry(key, item, known) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return _redact_list(value, known)
    if isinstance(value, str):
        return redact_text(value, known=known)
    return value


def _redact_entry(key: Any, value: Any, known: Mapping[str, str] | None) -> Any:
    kind = _secret_kind(key) if isinstance(key, str) else None
    whole = isinstance(value, str | int | float) and not isinstance(value, bool) and value != ""
    if kind and whole:
        return f"[REDACTED:{kind}]"
    return redact(value, known=known)


def _redact_list(items: Sequence[Any], known: Mapping[str, str] | None) -> list[Any]:
    words = [item if isinstance(item, str) else "" for item in items]
    flagged: dict[int, list[SecretSpan]] = {}
    for index, lo, hi, kind in _flag_values(words):
        flagged.setdefault(index, []).append(SecretSpan(lo, hi, kind))
    redacted = []
    for index, item in enumerate(items):
        if index in flagged:
            spans = [*find_secrets(item, known=known), *flagged[index]]
            redacted.append(mask(item, _resolve(item, spans)))
        else:
            redacted.append(redact(item, known=known))
    return redacted
