"""Nested quantifiers in policy regexes are refused (SPEC §2.7 P3), and only they.

A group that repeats a body of variable length — ``(a+)+``, ``(?:a|b*)*`` — is refused when
a policy file is loaded, as a ``regex_compilation`` error naming the file and the rule, like
any other refused pattern. Quantifier characters that are literal (escaped, in a class, in
``\\Q…\\E``) and groups repeated at most once are not nested quantifiers.
"""

from __future__ import annotations

import re
from pathlib import Path
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworld.policy.grant_rules import path_pattern
from agentworld.policy.loader import (
    builtin_rules,
    compile_pattern,
    load_policy_file,
    load_policy_text,
)
from agentworld.policy.nested_quantifiers import nested_quantifier

# Each refused pattern with the fragment the error names.
REFUSED = [
    pytest.param("(a+)+", "(a+)+", id="plus-in-plus"),
    pytest.param("(a+)+$", "(a+)+", id="plus-in-plus-anchored"),
    pytest.param("(a*)*", "(a*)*", id="star-in-star"),
    pytest.param("(?:a+)*", "(?:a+)*", id="non-capturing"),
    pytest.param("(a|b+)+", "(a|b+)+", id="quantifier-in-one-branch"),
    pytest.param("((ab)*c)+", "((ab)*c)+", id="quantified-inner-group"),
    pytest.param("((a+))+", "((a+))+", id="quantifier-two-groups-down"),
    pytest.param("(a{2,})+", "(a{2,})+", id="open-range-inside"),
    pytest.param("(a{1,3})*", "(a{1,3})*", id="bounded-range-inside"),
    pytest.param("(.*a){2,}", "(.*a){2,}", id="open-range-outside"),
    pytest.param("(a+){2,5}", "(a+){2,5}", id="bounded-range-outside"),
    pytest.param("(a+){3}", "(a+){3}", id="exact-count-outside"),
    pytest.param("(a?)+", "(a?)+", id="optional-inside"),
    pytest.param("(a+)+?", "(a+)+?", id="lazy-outside"),
    pytest.param("(a+?)*", "(a+?)*", id="lazy-inside"),
    pytest.param("x(y(a+)?)+z", "(y(a+)?)+", id="optional-group-inside"),
    pytest.param("(?P<n>a+)+", "(?P<n>a+)+", id="named-group"),
    pytest.param("(?<n>a+)*", "(?<n>a+)*", id="re2-named-group"),
    pytest.param("(?i:a+)+", "(?i:a+)+", id="group-with-flags"),
    pytest.param("(?=a+)+", "(?=a+)+", id="lookahead-group"),
    pytest.param("(?<!a*)+", "(?<!a*)+", id="lookbehind-group"),
    pytest.param("(\\d+,)*", "(\\d+,)*", id="escape-class-inside"),
    pytest.param("([a-z]+ ?)+", "([a-z]+ ?)+", id="bracket-class-inside"),
    pytest.param("(\\pL+)+", "(\\pL+)+", id="unicode-class-inside"),
    pytest.param("(\\p{Greek}+)+", "(\\p{Greek}+)+", id="braced-unicode-class-inside"),
    pytest.param("([[:alpha:]]+)+", "([[:alpha:]]+)+", id="posix-class-inside"),
    pytest.param("\\Q(\\E(a+)+", "(a+)+", id="after-quoted-text"),
    pytest.param("[)]+(a*)*", "(a*)*", id="after-class-holding-a-paren"),
    pytest.param("(?i)(a+)+", "(a+)+", id="after-flags"),
    pytest.param("ok|(a+)+", "(a+)+", id="in-second-branch"),
]  # fmt: skip

ACCEPTED = [
    pytest.param("^git (log|status)", id="alternation"),
    pytest.param('"command":"ls( -la)?"', id="optional-group"),
    pytest.param("a+b*", id="quantifiers-side-by-side"),
    pytest.param("(ab)+", id="fixed-body"),
    pytest.param("(a|b)+", id="fixed-branches"),
    pytest.param("[+*]+", id="quantifier-chars-in-class"),
    pytest.param("\\(a+\\)+", id="escaped-parens"),
    pytest.param("x{2,5}", id="range-on-a-character"),
    pytest.param("(?:foo)?", id="optional-non-capturing"),
    pytest.param("(a+)?", id="varying-group-at-most-once"),
    pytest.param("(a+)??", id="varying-group-at-most-once-lazy"),
    pytest.param("(a+){1}", id="varying-group-exactly-once"),
    pytest.param("(a+){0,1}", id="varying-group-zero-or-once"),
    pytest.param("(a{2})+", id="exact-count-inside"),
    pytest.param("(a{2,2})*", id="degenerate-range-inside"),
    pytest.param("(\\+)+", id="escaped-plus-inside"),
    pytest.param("([+*?])+", id="class-of-quantifier-chars-inside"),
    pytest.param("([]+]x)+", id="bracket-first-in-class"),
    pytest.param("([^]+]x)*", id="bracket-first-in-negated-class"),
    pytest.param("([[:alpha:]+]x)+", id="posix-class-then-plus-in-class"),
    pytest.param("\\Q(a+)+\\E", id="quoted-text"),
    pytest.param("(x{,3})+", id="re2-literal-braces-inside"),
    pytest.param("(\\x{41}b)+", id="braced-hex-escape-inside"),
    pytest.param("(?i)a+(?s)b*", id="flag-setters"),
    pytest.param("(a|aa)+$", id="overlapping-branches"),
    pytest.param("(.|\\s)*x", id="overlapping-classes"),
    pytest.param("(a+)(b+)", id="varying-groups-side-by-side"),
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "fragment"), REFUSED)
def test_nested_quantifier_is_found_and_named(pattern: str, fragment: str) -> None:
    assert nested_quantifier(pattern) == fragment


@pytest.mark.parametrize("pattern", ACCEPTED)
def test_pattern_without_nested_quantifier_passes(pattern: str) -> None:
    assert nested_quantifier(pattern) is None
    assert compile_pattern(pattern).pattern == pattern


# RE2 refuses lookaround (and says so) before nesting is looked at.
REFUSED_BY_RE2_FIRST = {"(?=a+)+", "(?<!a*)+"}


@pytest.mark.parametrize(
    ("pattern", "fragment"), [p for p in REFUSED if p.values[0] not in REFUSED_BY_RE2_FIRST]
)
def test_compile_pattern_refuses_nested_quantifier(pattern: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=f"nests quantifiers in {re.escape(repr(fragment))}"):
        compile_pattern(pattern)


# --- the scanner against Python's parser, on patterns both dialects read alike -------------

_ATOMS = st.sampled_from(["a", "b", ".", "\\d", "[ab]", "[+*(]", "[]?]", "\\+", "\\(", "\\{"])
_QUANTIFIERS = st.sampled_from(
    ["", "", "", "*", "+", "?", "*?", "+?", "??", "{0}", "{1}", "{2}", "{0,1}", "{1,3}",
     "{2,}", "{2,2}", "{1,}?"]
)  # fmt: skip
_OPENERS = st.sampled_from(["(", "(?:", "(?i:"])


def _alternation(terms: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pieces = st.tuples(terms, _QUANTIFIERS).map("".join)
    branches = st.lists(pieces, min_size=1, max_size=4).map("".join)
    return st.lists(branches, min_size=1, max_size=3).map("|".join)


_TERMS = st.recursive(
    _ATOMS,
    lambda inner: st.tuples(_OPENERS, _alternation(inner)).map(lambda t: f"{t[0]}{t[1]})"),
    max_leaves=12,
)
_PATTERNS = _alternation(_TERMS)


def _varies(items: Any) -> bool:
    """Whether a parsed (sub)pattern holds a repetition of variable count, at any depth."""
    return any(
        (op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and arg[0] != arg[1])
        or any(_varies(sub) for sub in _children(op, arg))
        for op, arg in items
    )


def _nested(items: Any) -> bool:
    for op, arg in items:
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and arg[1] > 1 and _varies(arg[2]):
            return True
        if any(_nested(sub) for sub in _children(op, arg)):
            return True
    return False


def _children(op: Any, arg: Any) -> list[Any]:
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        return [arg[2]]
    if op is sre.SUBPATTERN:
        return [arg[3]]
    if op is sre.BRANCH:
        return list(arg[1])
    return []


@given(_PATTERNS)
def test_scanner_agrees_with_pythons_parser(pattern: str) -> None:
    expected = _nested(_parser.parse(pattern))
    fragment = nested_quantifier(pattern)
    assert (fragment is not None) is expected, pattern
    if fragment is not None:  # the fragment is a piece of the pattern, nested on its own
        assert fragment in pattern
        assert nested_quantifier(fragment) == fragment


# --- loading policy files -------------------------------------------------------------------

GOOD = '[[rule]]\ntoolName = "read_file"\ndecision = "allow"\npriority = 10\n'


@pytest.mark.parametrize(
    "criterion",
    [
        pytest.param("toolName = 'note'\nargsPattern = '(a+)+$'", id="args-pattern"),
        pytest.param("toolName = 'shell_cmd'\ncommandRegex = '^echo (a|b+)+$'", id="command-regex"),
    ],
)
def test_policy_file_with_nested_quantifier_reports_regex_compilation_for_the_rule(
    tmp_path: Path, criterion: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        f"{GOOD}\n[[rule]]\n{criterion}\ndecision = 'deny'\npriority = 1\n\n{GOOD}",
        encoding="utf-8",
    )
    loaded = load_policy_file(path)
    (error,) = loaded.errors
    assert (error.type, error.file, error.rule) == ("regex_compilation", str(path), 1)
    assert "nests quantifiers" in error.message
    assert str(error).startswith(f"{path}, rule 2: regex_compilation: ")  # numbered from 1
    assert [r.index for r in loaded.rules] == [0, 2]  # the other rules still load


@pytest.mark.parametrize("pattern", ["^git (log|status)", '"command":"ls( -la)?"', "(ab)+"])
def test_policy_file_with_benign_repetition_loads(pattern: str) -> None:
    text = (
        f"[[rule]]\ntoolName = 'note'\nargsPattern = '{pattern}'\ndecision = 'deny'\npriority = 1\n"
    )
    assert load_policy_text(text, source="p.toml").errors == []


def test_shipped_defaults_and_file_grants_are_not_refused() -> None:
    assert builtin_rules()
    # A file-tool grant's pattern nests quantifiers by construction (``(?:\./+)*``).
    pattern = path_pattern([".env", "/etc/hosts", "a/b.txt"])
    assert nested_quantifier(pattern.pattern) is not None
    assert pattern.search('{\x00"path":".//.env"\x00}') is not None


def test_policy_test_cli_reports_a_nested_quantifier_with_file_and_rule(
    cli: Any, tmp_path: Path
) -> None:
    policy = tmp_path / "bad.toml"
    policy.write_text(f"{GOOD}\n[[rule]]\ntoolName = 'note'\nargsPattern = '(a+)+$'\n"
                      "decision = 'deny'\npriority = 1\n")  # fmt: skip
    result = cli("policy", "test", "--policy", str(policy), "--tool", "shell_cmd",
                 "--args", '{"command":"ls"}', check=False)  # fmt: skip
    assert result.code == 1
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert f"{policy}, rule 2: regex_compilation: " in line  # the second rule
    assert "nests quantifiers in '(a+)+'" in line
