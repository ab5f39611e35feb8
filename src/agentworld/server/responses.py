"""JSON as the server sends it: text that always encodes as UTF-8.

A Python string may hold a lone surrogate (``"\\ud800"``), which UTF-8 cannot encode: the
request checks refuse one (``schemas``), but a database written before they did, or by the
Python API or the CLI (whose arguments carry undecodable bytes as surrogates), may hold some.
Sending such a document with the usual encoder fails half way — a 500 for every listing of
the world, and on the event stream a connection cut at that event on every resume, forever.
So lone surrogates are written as JSON escapes (``\\ud800``): valid JSON, read back by a client
as the same string, and the rest of the document is sent as it is. A ``NaN`` or ``Infinity`` an
older version stored in a tool's arguments goes out as the string ``"NaN"`` (``strict_json``),
for the same reason.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse as _StarletteJSON

from agentworld import strict_json
from agentworld.models.text import escape_surrogates


def json_text(document: Any) -> str:
    """``document`` as compact JSON that encodes as UTF-8 whatever strings it holds."""
    text = strict_json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    # Outside strings JSON is ASCII, so every surrogate found is inside a string or a key.
    return escape_surrogates(text)


class JSONResponse(_StarletteJSON):
    """Starlette's JSON response, rendered with ``json_text``: every route and error of the
    API answers with this one."""

    def render(self, content: Any) -> bytes:
        return json_text(content).encode("utf-8")
