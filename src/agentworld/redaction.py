"""Secret redaction for everything a person or a log sees: tool logs, approval prompts, audit.

Two nets: values under keys that name a secret (``api_key``, ``token``,
``password`` …) are replaced whole, at any depth; and secret-shaped substrings
in any text (provider keys, bearer tokens, ``password=…`` pairs, private-key
blocks) are masked. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"

_SECRET_KEY = re.compile(
    r"(?i)(api[_-]?key|apikey|secret|token|passw(or)?d|passwd|pwd|authorization|auth[_-]?header|"
    r"credential|private[_-]?key|access[_-]?key|session[_-]?id|cookie)"
)
_SECRET_TEXT = [
    re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{16,}"),  # OpenAI/Anthropic-style keys
    re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack tokens
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"),  # Google API keys
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
]
# key=value / key: value pairs inside free text (command lines, URLs, env dumps).
_SECRET_PAIR = re.compile(
    r"(?i)\b([A-Za-z0-9_]*(?:api[_-]?key|secret|token|passw(?:or)?d|passwd|pwd)[A-Za-z0-9_]*)"
    r"(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s&;\"']+)"
)
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^:/\s@]+):([^@\s/]+)@")


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def redact_text(text: str) -> str:
    for pattern in _SECRET_TEXT:
        text = pattern.sub(REDACTED, text)
    text = _SECRET_PAIR.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)


def redact(value: Any) -> Any:
    """A copy of ``value`` (JSON-like data) with secrets replaced by ``[REDACTED]``."""
    if isinstance(value, dict):
        return {
            k: REDACTED if isinstance(k, str) and is_secret_key(k) and v not in (None, "") else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
