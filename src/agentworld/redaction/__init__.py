"""Secret redaction for what a person approves and what logs record (SPEC A9).

A masked value reads ``[REDACTED:<kind>]``. Redaction may hide a secret VALUE,
but it must never hide or rewrite shell syntax: when a prompt shows
``echo '[REDACTED]'`` while ``; touch R;`` runs in between, the person approves
a command they never saw. So every span this package masks consists only of
characters that are not shell syntax (no whitespace, quotes, ``$``, backticks,
backslashes, ``;&|()<>{}#*?[]``); a candidate value that contains any of them
(``$(cat f)``, a backtick) is code, not a secret, and stays visible (``_spans``).

The nets, all pure functions over text (no I/O, no ``os.environ``):

- known secret shapes: provider keys (``sk-…``, ``ghp_…``, ``AKIA…`` …), JWTs,
  passwords in URLs, ``Authorization`` and ``Cookie`` headers, the base64 body
  lines of private-key blocks (never the text between the markers) (``_shapes``);
- ``key=value`` / ``key: value`` pairs whose key names a secret, in free text,
  env dumps and JSON (``_names``);
- command-line flags whose next word (or attached value) is a secret
  (``--password x``, ``mysql -pX``, ``curl -u user:pw``, ``curl -b a=b``),
  found by a small tokenizer that knows words and simple quotes (``_flags``);
- values the caller knows are secret (``known``, e.g. from
  :func:`secret_env_values`).

:func:`redact` applies this to JSON-like data and masks whole values under
secret-named keys. :func:`redact_json_text` applies it to a JSON document's text by its decoded
strings: in the text a newline inside a string is the two characters ``\\n``, so a
``key=value`` pair on a string's second line would never be seen there.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agentworld.redaction._flags import command_spans, flag_values
from agentworld.redaction._names import is_secret_key, pair_spans, secret_kind
from agentworld.redaction._shapes import private_key_spans, shape_spans
from agentworld.redaction._spans import CLEAN_RUN, SecretSpan, resolve

__all__ = [
    "KNOWN_MIN_LENGTH",
    "PROVIDER_KEY_NAMES",
    "REDACTED",
    "SecretSpan",
    "find_secrets",
    "is_secret_key",
    "mask",
    "redact",
    "redact_json_text",
    "redact_text",
    "secret_env_values",
]

REDACTED = "[REDACTED]"
"""The kind-less mask older records hold; masks are written ``[REDACTED:<kind>]``."""

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
_ENV_SECRET_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
# Case-insensitive patterns run over an ASCII-lower-cased copy of the text, with the same positions.
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


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


def _known_spans(text: str, known: Mapping[str, str] | None) -> Iterator[SecretSpan]:
    """Every occurrence of a known secret value; a value with shell-syntax characters in it
    (``p@ss word``) is masked piecewise, around them."""
    for name, value in (known or {}).items():
        if len(value) < KNOWN_MIN_LENGTH:
            continue
        at = text.find(value)
        while at != -1:
            for run in CLEAN_RUN.finditer(text, at, at + len(value)):
                yield SecretSpan(run.start(), run.end(), name)
            at = text.find(value, at + 1)


def find_secrets(text: str, *, known: Mapping[str, str] | None = None) -> list[SecretSpan]:
    """Sorted, non-overlapping spans of secret values in free text or a shell command line.

    ``known`` maps a name (an env var name such as ``OPENAI_API_KEY``) to a secret value,
    masked wherever it appears with that name as kind; values shorter than
    ``KNOWN_MIN_LENGTH`` are ignored. No span ever contains a shell-syntax character.
    """
    low = text.translate(_ASCII_LOWER)

    def candidates() -> Iterator[SecretSpan]:
        yield from _known_spans(text, known)
        yield from shape_spans(text, low)
        yield from private_key_spans(text)
        yield from pair_spans(text, low)
        yield from command_spans(text, low)

    return resolve(text, candidates())


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
    words of one command (``["--token", "abc"]``), after the words of the ``command`` beside
    it when it is a shell call's ``parameters`` (``docker`` + ``["login", "-p", "X"]``). Keys
    are never changed.
    """
    if isinstance(value, dict):
        lead = _command_words(value)
        return {
            key: _redact_list(item, known, lead=lead)
            if key == "parameters" and isinstance(item, list | tuple)
            else _redact_entry(key, item, known)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return _redact_list(value, known)
    if isinstance(value, str):
        return redact_text(value, known=known)
    return value


def _redact_entry(key: Any, value: Any, known: Mapping[str, str] | None) -> Any:
    kind = secret_kind(key) if isinstance(key, str) else None
    whole = isinstance(value, str | int | float) and not isinstance(value, bool) and value != ""
    if kind and whole:
        return f"[REDACTED:{kind}]"
    return redact(value, known=known)


_LAST_COMMAND = re.compile(r"[^\n;&|()]*\Z")


def _command_words(arguments: Mapping[Any, Any]) -> tuple[str, ...]:
    """The words of the last simple command of a shell call's ``command``, which its
    ``parameters`` continue (``shell_cmd``: the line is the command, then the parameters)."""
    command = arguments.get("command")
    if not isinstance(command, str) or not isinstance(arguments.get("parameters"), list | tuple):
        return ()
    found = _LAST_COMMAND.search(command)
    return tuple(found[0].split()) if found else ()


def _redact_list(
    items: Sequence[Any], known: Mapping[str, str] | None, *, lead: Sequence[str] = ()
) -> list[Any]:
    """``items`` redacted one by one, and read together as the words of one command that
    ``lead`` starts, so a flag's value is found in the item after the flag."""
    words = [*lead, *(item if isinstance(item, str) else "" for item in items)]
    flagged: dict[int, list[SecretSpan]] = {}
    for index, lo, hi, kind in flag_values(words):
        if index >= len(lead):
            flagged.setdefault(index - len(lead), []).append(SecretSpan(lo, hi, kind))
    redacted = []
    for index, item in enumerate(items):
        if index in flagged:
            spans = [*find_secrets(item, known=known), *flagged[index]]
            redacted.append(mask(item, resolve(item, spans)))
        else:
            redacted.append(redact(item, known=known))
    return redacted


MAX_NESTING = 3
"""How many levels of JSON inside a JSON string :func:`redact_json_text` decodes."""


def redact_json_text(text: str, *, known: Mapping[str, str] | None = None) -> str:
    """``text`` with its secrets masked, read as the JSON document it is (a tool's result).

    Each string is redacted as the text it encodes, not as its escaped form, where ``\\n``
    and ``\\"`` hide where a line or a value starts; a string that is itself a JSON object
    or array (an MCP text block, a client's result) is decoded in turn. Text that is not JSON
    is redacted as it is. When nothing is masked, ``text`` comes back unchanged.
    """
    return _redact_document(text, known, 0)


def _redact_document(text: str, known: Mapping[str, str] | None, level: int) -> str:
    try:
        value = json.loads(text)
        cleaned = redact(_nested_documents(value, known, level), known=known)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a walk can go
        return redact_text(text, known=known)
    return text if cleaned == value else json.dumps(cleaned)


def _nested_documents(value: Any, known: Mapping[str, str] | None, level: int) -> Any:
    """``value`` with each string that holds a JSON object or array replaced by that
    document's redacted text (so the pass over the whole finds nothing more in it)."""
    if isinstance(value, dict):
        return {key: _nested_documents(item, known, level) for key, item in value.items()}
    if isinstance(value, list):
        return [_nested_documents(item, known, level) for item in value]
    if isinstance(value, str) and level < MAX_NESTING and value.lstrip()[:1] in ("{", "["):
        return _redact_document(value, known, level + 1)
    return value
