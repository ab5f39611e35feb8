"""Stable stringify (SPEC P1): the text that ``argsPattern`` regexes are searched in.

Keys are sorted at every depth and separators are compact, so reordering keys can
never dodge a pattern. Each TOP-LEVEL ``"key":value`` pair is wrapped in NUL
characters (``\\x00``), so a pattern can anchor on a whole top-level pair —
``\\x00"command":"rm `` — and a nested value that merely looks like that pair
(``{"note": {"command": "rm"}}``) cannot impersonate it: inside nested values there
are no NULs, and JSON escapes any NUL that a string value itself contains.
"""

from __future__ import annotations

import json
from typing import Any

PAIR_DELIMITER = "\x00"

# What ``json.dumps`` makes for these options on every call, made once.
_compact = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
).encode
_key = json.JSONEncoder(ensure_ascii=False).encode


def stable_stringify(arguments: dict[str, Any]) -> str:
    pairs = (
        f"{PAIR_DELIMITER}{_key(str(key))}:{_compact(arguments[key])}{PAIR_DELIMITER}"
        for key in sorted(arguments, key=str)
    )
    return "{" + ",".join(pairs) + "}"
