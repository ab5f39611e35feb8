"""A secret's place in a text, and the rule every masked span keeps: no shell syntax in it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SecretSpan:
    """``text[start:end]`` is a secret of this kind: ``password``, ``api_key``, an env name …"""

    start: int
    end: int
    kind: str


# Characters that may never be inside a masked span: shell syntax and control characters.
_SYNTAX = r"\s'\"$`\\;&|()<>{}#*?\[\]\x00-\x1f\x7f"
_UNCLEAN = re.compile(f"[{_SYNTAX}]")
CLEAN_RUN = re.compile(f"[^{_SYNTAX}=][^{_SYNTAX}]*")


def _is_clean(text: str, start: int, end: int) -> bool:
    # A leading "=" belongs to the ``key=value`` around the value, never to the mask.
    return start < end and text[start] != "=" and _UNCLEAN.search(text, start, end) is None


def resolve(text: str, candidates: Iterable[SecretSpan]) -> list[SecretSpan]:
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
