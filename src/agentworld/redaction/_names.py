"""Names that say their value is a secret (``db_password``, ``x-api-key`` …), and the
values of ``key=value`` pairs with such a name."""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Iterator

from agentworld.redaction._spans import SecretSpan

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
_KEY_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")


@functools.lru_cache(maxsize=4096)  # the same few names come back in every call
def secret_kind(name: str) -> str | None:
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
    return secret_kind(key) is not None


# The last word of a secret name (``key`` for ``api_key``, ``id`` for ``session_id``), then ``=``
# or ``:``; runs over the lower-cased text. The whole name, found by scanning back, must then
# pass ``secret_kind``.
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


def pair_spans(text: str, low: str) -> Iterator[SecretSpan]:
    """Values of ``name=value``, ``name: value`` and ``"name": "value"`` with a secret name."""
    for m in _PAIR_NAME_END.finditer(low):
        start, floor = m.start(), max(0, m.start() - _MAX_NAME)
        while start > floor and text[start - 1] in _KEY_CHARS:
            start -= 1
        kind = secret_kind(text[start : m.end("tail")])
        if kind is None or kind in ("authorization", "cookie"):
            continue  # headers have their own parsers (_shapes)
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
