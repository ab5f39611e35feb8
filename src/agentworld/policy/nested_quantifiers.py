"""Finding nested quantifiers in policy regexes, which SPEC P3 refuses.

A nested quantifier is a group whose body can repeat a variable number of times (``*``,
``+``, ``?``, ``{m,}``, ``{m,n}`` with ``n > m``, at any depth) and which is itself repeated
more than once (``*``, ``+``, ``{m,}``, ``{n}`` or ``{m,n}`` with ``n > 1``, lazy or not):
``(a+)+``, ``(?:a|b*)*``, ``((ab)*c){2,}``. A backtracking engine may try every way of
splitting a text between the two repetitions, which takes exponential time. Policy patterns
run on RE2 (``loader.py``), which never backtracks, so here such a pattern would only be
slow on another engine; it is refused all the same, because the specification says so and a
policy file may well be read by tools that use one. A group repeated at most once
(``(a+)?``, ``(ab)+`` with a fixed body) and overlapping alternatives such as ``(a|aa)+``
are not nested quantifiers and are accepted.

Why a scanner of our own rather than a parser. Policy patterns are RE2 syntax, and the
google-re2 binding does not expose RE2's parse tree. Python's parser (``re._parser``) reads
a different dialect: it refuses syntax the policy docs advertise (``\\pL``, ``\\p{Greek}``,
``\\z``, ``\\Q…\\E``, ``(?<name>…)``, flags in mid-pattern), warns about ``[[:space:]]`` and
reads ``{,3}`` as a repetition where RE2 reads three literal characters, so it would either
refuse valid patterns or let a nested quantifier through next to one of them. The grammar
that matters here is small — escapes, character classes, groups, ``|`` and quantifiers — and
the scanner only ever sees patterns RE2 has already accepted, so it never has to make sense
of a malformed one. The tests check it against Python's parser on patterns both dialects
read alike (``tests/policy/test_nested_quantifiers.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_REPEAT = re.compile(r"\{(\d+)(?:(,)(\d*))?\}")
"""RE2's counted repetition: ``{n}``, ``{n,}``, ``{n,m}`` (``{,m}`` is literal text)."""
_NAMED_CLASS = re.compile(r"\[:\^?[a-z]+:\]")
"""A POSIX class inside a bracket expression: ``[:alpha:]``, ``[:^space:]``."""
_FLAGS = re.compile(r"\(\?[imsU-]*([:)])")
"""``(?i)`` sets flags (no group); ``(?i:`` opens a group."""


@dataclass
class _Group:
    start: int
    """Where the group (its ``(``) starts in the pattern; 0 for the pattern as a whole."""
    varies: bool = False
    """Whether the body holds a repetition of variable count, at any depth."""


@dataclass(frozen=True)
class _Atom:
    """What a quantifier that comes next would repeat."""

    start: int
    varies: bool
    """A group whose body varies, or an atom already quantified."""


def nested_quantifier(pattern: str) -> str | None:
    """The first repeated group in ``pattern`` whose body itself varies in length — the
    fragment, e.g. ``'(a+)+'`` of ``'^(a+)+$'`` — or None when there is none.

    ``pattern`` is RE2 syntax; a pattern RE2 refuses may give any answer.
    """
    groups = [_Group(start=0)]
    last: _Atom | None = None
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            last, i = _Atom(i, varies=False), _skip_escape(pattern, i)
        elif char == "[":
            last, i = _Atom(i, varies=False), _skip_class(pattern, i)
        elif char == "(":
            flags = _FLAGS.match(pattern, i)
            if flags is not None and flags[1] == ")":  # only sets flags: nothing to repeat
                last, i = None, flags.end()
                continue
            groups.append(_Group(start=i))
            last, i = None, _group_body(pattern, i)
        elif char == ")" and len(groups) > 1:
            group = groups.pop()
            groups[-1].varies |= group.varies  # ((a+)) repeats as (a+) does
            last, i = _Atom(group.start, varies=group.varies), i + 1
        elif char == "|":
            last, i = None, i + 1
        elif (bounds := _quantifier(pattern, i)) is not None:
            low, high, end = bounds
            if end < len(pattern) and pattern[end] == "?":  # lazy: the same repetition
                end += 1
            if last is not None:
                if last.varies and (high is None or high > 1):
                    return pattern[last.start : end]
                varies = high is None or high > low
                groups[-1].varies |= varies
                last = _Atom(last.start, varies=last.varies or varies)
            i = end
        else:
            last, i = _Atom(i, varies=False), i + 1
    return None


def _quantifier(pattern: str, i: int) -> tuple[int, int | None, int] | None:
    """``(low, high, end)`` of the quantifier at ``i`` (``high`` None: unbounded), if one is."""
    char = pattern[i]
    if char == "*":
        return 0, None, i + 1
    if char == "+":
        return 1, None, i + 1
    if char == "?":
        return 0, 1, i + 1
    repeat = _REPEAT.match(pattern, i) if char == "{" else None
    if repeat is None:
        return None
    low = int(repeat[1])
    high = low if repeat[2] is None else int(repeat[3]) if repeat[3] else None
    return low, high, repeat.end()


def _skip_escape(pattern: str, i: int) -> int:
    """The end of the escape at ``i``: ``\\+``, ``\\pL``, ``\\p{Greek}``, ``\\x{41}``, and a
    whole ``\\Q…\\E`` (literal text, whose ``(`` and ``+`` are characters)."""
    kind = pattern[i + 1 : i + 2]
    if kind == "Q":
        close = pattern.find("\\E", i + 2)
        return len(pattern) if close < 0 else close + 2
    if kind in ("p", "P", "x") and pattern[i + 2 : i + 3] == "{":
        close = pattern.find("}", i + 3)
        return len(pattern) if close < 0 else close + 1
    return i + 2


def _skip_class(pattern: str, i: int) -> int:
    """The end of the bracket expression at ``i``: a ``]`` right after ``[`` or ``[^`` is a
    member, as are ``(``, ``+`` and ``*``; ``[:alpha:]`` and escapes do not close it."""
    i += 1
    if pattern[i : i + 1] == "^":
        i += 1
    if pattern[i : i + 1] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        if pattern[i] == "\\":
            i += 2
        elif (named := _NAMED_CLASS.match(pattern, i)) is not None:
            i = named.end()
        else:
            i += 1
    return i + 1


def _group_body(pattern: str, i: int) -> int:
    """Where the body of the group opened at ``i`` starts, after ``(``, ``(?:``, ``(?i:``,
    ``(?P<name>``, ``(?<name>`` or a lookaround's ``(?=``, ``(?!``, ``(?<=``, ``(?<!``."""
    if pattern[i + 1 : i + 2] != "?":
        return i + 1
    for prefix in ("(?=", "(?!", "(?<=", "(?<!"):
        if pattern.startswith(prefix, i):
            return i + len(prefix)
    if pattern.startswith(("(?P<", "(?<"), i):
        close = pattern.find(">", i)
        return len(pattern) if close < 0 else close + 1
    flags = _FLAGS.match(pattern, i)
    return flags.end() if flags is not None else i + 2
