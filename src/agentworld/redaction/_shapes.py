"""Secrets recognised by their shape: provider keys, JWTs, passwords in URLs,
``Authorization`` and ``Cookie`` headers, and the body lines of private-key blocks.

Every pattern starts with literal text so that the regex engine can skip ahead to it; the
check that a match starts a word is done in Python. Case-insensitive patterns run over an
ASCII-lower-cased copy of the text (``low``), which has the same positions.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator

from agentworld.redaction._spans import SecretSpan

_WORD_CHARS = frozenset(string.ascii_letters + string.digits + "_-")

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


def shape_spans(text: str, low: str) -> Iterator[SecretSpan]:
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
            for start, end in cookie_values(text, m.end(), len(text), first_only=set_cookie):
                yield SecretSpan(start, end, "cookie")


def cookie_values(
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


def private_key_spans(text: str) -> Iterator[SecretSpan]:
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
