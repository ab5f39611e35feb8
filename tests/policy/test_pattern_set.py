"""One RE2 set pass answers exactly what searching each pattern would (policy/pattern_set.py)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from agentworld.policy.loader import compile_pattern
from agentworld.policy.pattern_set import PatternSet

PATTERNS = [
    '"command":"rm', r"prod/\w+", "^\\x00", "a{3}", r"(a|aa)+$", r"\d{2,}", "x", '"token":',
]
COMPILED = [compile_pattern(p) for p in PATTERNS]
SET = PatternSet(COMPILED)


@given(st.text(alphabet='arm"cod:/pxt0123 \x00{}', max_size=60))
def test_the_set_finds_exactly_the_patterns_a_search_finds(text: str) -> None:
    found = SET.matcher(text)
    assert [found(p) for p in COMPILED] == [p.search(text) is not None for p in COMPILED]


def test_patterns_from_elsewhere_are_searched_one_by_one() -> None:
    plain = re.compile("(?i)RM")
    found = PatternSet([plain, *COMPILED]).matcher("rm -rf")
    assert found(plain) is True and found(COMPILED[0]) is False
