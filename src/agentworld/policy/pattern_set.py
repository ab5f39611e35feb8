"""Every ``argsPattern`` of an engine in one RE2 set, searched in one linear pass (SPEC P1).

RE2 keeps policy patterns linear in the text (``loader.py``), but each search from Python
has a fixed cost. An engine with several pattern rules for a tool would pay it once per rule;
an RE2 ``Set`` answers "which of these patterns occur in this text" in one pass instead.
Patterns compiled elsewhere (a plain ``re`` pattern built by an embedder) are searched one by
one.

Compiling a set costs more than searching it (benchmarks/README.md), and the runtime builds
an engine for every call it authorizes (the world's files, settings and grants are read
afresh each time). The same patterns make the same set, so sets are kept by their patterns' text
(:func:`_compiled`): an RE2 set is immutable once compiled, and searching it is safe from
any thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import re2

from agentworld.policy.loader import RE2_OPTIONS
from agentworld.policy.rules import CompiledPattern

_RE2_PATTERN = type(re2.compile(""))

Matcher = Callable[[CompiledPattern], bool]


@functools.lru_cache(maxsize=256)
def _compiled(texts: tuple[str, ...]) -> tuple[re2.Set, tuple[int, ...]]:
    """One set searching for each of ``texts``, and the index it gives each, in order."""
    searcher = re2.Set.SearchSet(RE2_OPTIONS)
    indexes = tuple(searcher.Add(text) for text in texts)
    searcher.Compile()
    return searcher, indexes


class PatternSet:
    def __init__(self, patterns: Iterable[CompiledPattern]) -> None:
        self._index: dict[int, int] = {}
        self._set: re2.Set | None = None
        together = [p for p in dict.fromkeys(patterns) if isinstance(p, _RE2_PATTERN)]
        if not together:
            return
        self._set, indexes = _compiled(tuple(pattern.pattern for pattern in together))
        self._index = {id(pattern): i for pattern, i in zip(together, indexes, strict=True)}

    def matcher(self, text: str) -> Matcher:
        """Whether a pattern occurs in ``text``; the set is searched once, on first use."""
        hits: frozenset[int] | None = None

        def found(pattern: CompiledPattern) -> bool:
            nonlocal hits
            index = self._index.get(id(pattern))
            if index is None or self._set is None:
                return pattern.search(text) is not None
            if hits is None:
                hits = frozenset(self._set.Match(text) or ())  # None when nothing matches
            return index in hits

        return found
