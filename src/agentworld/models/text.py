"""Text that is not text -- lone surrogates, NUL characters -- refused on the way in by every
interface.

A Python string may hold a lone surrogate (``"\\ud800"``): JSON can spell one and Python
decodes it, and the command line hands undecodable bytes over as such (``surrogateescape``).
UTF-8 cannot encode it, so it fails the database, or is stored escaped and then fails every
response and event-stream frame that carries it. The HTTP bodies (``server.schemas``), the
settings of worlds and agents (``settings_checks.build_settings``) and posted messages
(``AgentWorld.post``) refuse it; what an older database already holds is sent escaped
(``escape_surrogates``).

A NUL character is text to Python and to SQLite, but PostgreSQL's text type refuses it: the
same message would be stored on one backend and fail on the other. A person's message with one
is refused (``text_problem``); text a model or a tool produces keeps its place as U+FFFD, the
replacement character, when it is stored (``storable``), so a tool that prints binary output
does not fail the turn.
"""

from __future__ import annotations

import re
from typing import Any

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A code point UTF-8 cannot encode (a half of a UTF-16 pair, alone in a Python string)."""


def _escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as ``\\uXXXX``: inside a JSON string that is
    the same character, and in a plain message it shows what was there."""
    return LONE_SURROGATE.sub(_escape, text)


def lone_surrogate_at(value: Any) -> str | None:
    """Where in the JSON ``value`` a string — a value or a key — holds a lone surrogate
    (``""`` for ``value`` itself, else a path such as ``mcpServers.gh.env``), or None.

    JSON may spell one (``"\\ud800"``) and Python decodes it, but it is no text: UTF-8 cannot
    encode it, so it would fail the database, or be stored escaped and then fail every response
    and event-stream frame that carries it. Read without recursion: a body may nest deeply."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if LONE_SURROGATE.search(item):
                return where
        elif isinstance(item, dict):
            for key, inner in item.items():
                name = escape_surrogates(str(key))
                path = f"{where}.{name}" if where else name
                if name != str(key):  # the key itself holds one
                    return path
                stack.append((path, inner))
        elif isinstance(item, list):
            stack.extend((f"{where}[{index}]", inner) for index, inner in enumerate(item))
    return None


NUL = "\x00"
REPLACEMENT = "\ufffd"


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be a message a person posts, or None: a lone surrogate, a NUL."""
    if LONE_SURROGATE.search(text):
        return "holds a lone surrogate, which is not text (undecodable bytes?)"
    if NUL in text:
        return "holds a NUL character (\\x00), which a message cannot hold"
    return None


def storable(text: str | None) -> str | None:
    """``text`` as a database stores it on every backend: each NUL made U+FFFD."""
    if text is None or NUL not in text:
        return text
    return text.replace(NUL, REPLACEMENT)
