"""JSON as the standard defines it: no ``NaN``, no ``Infinity``, no number too large for a float.

Python's ``json`` reads ``NaN``, ``Infinity`` and ``-Infinity``, turns ``1e400`` into ``inf``,
and writes all of them back; no other JSON reader takes them (a browser's ``JSON.parse``,
PostgreSQL's ``json`` type, the HTTP API's encoder). So what a model writes is read strictly
(``loads``): such a value is refused where it enters and never stored. What an older version
stored anyway goes out as the string it was spelled as (``finite``, ``dumps``), so one such
row cannot break a listing of the whole world.

No dependency beyond the standard library: the CLI's quick paths print through this too.
"""

from __future__ import annotations

import json
import math
from typing import Any


class NotStrictJSON(ValueError):
    """Text that Python's ``json`` reads but JSON does not allow (``NaN``, ``1e400``)."""


def _constant(word: str) -> Any:
    raise NotStrictJSON(f"{word} is not a JSON number")


def _float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise NotStrictJSON(f"the number {text} is too large")
    return number


def loads(text: str | bytes) -> Any:
    """``text`` read as strict JSON. Raises ``ValueError`` for text that is no JSON, a
    ``NotStrictJSON`` (a ``ValueError`` too) for ``NaN``/``Infinity``/an overflowing number,
    and ``RecursionError`` for nesting deeper than the parser can go."""
    return json.loads(text, parse_constant=_constant, parse_float=_float)


def _spelled(number: float) -> str:
    if math.isnan(number):
        return "NaN"
    return "Infinity" if number > 0 else "-Infinity"


def finite(value: Any) -> Any:
    """``value`` with every float that JSON cannot hold (``nan``, ``inf``, ``-inf``) replaced by
    the word Python's ``json`` spelled it with (``"NaN"``, ``"Infinity"``, ``"-Infinity"``)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else _spelled(value)
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` that always writes strict JSON: a non-finite float
    becomes its word as a string (``finite``). Costs nothing when there is none."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(finite(value), allow_nan=False, **options)
