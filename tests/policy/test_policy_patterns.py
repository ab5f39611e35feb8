"""Policy regexes run on RE2 (SPEC P3): linear time, so no pattern can hang the engine.

The patterns below backtrack exponentially in Python's ``re`` without nesting quantifiers
(``(.|\\s)*x``, ``(a|aa)+$``), so no refusal of nested quantifiers could catch them. On RE2
they load like any other pattern and are decided in time proportional to the text. Nested
quantifiers themselves (``(a+)+$``) are refused in policy files (``test_nested_quantifiers.py``);
RE2 still runs them in linear time where the package builds one (``grant_rules.py``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import compile_pattern, load_policy_text
from agentworld.policy.rules import PolicyDecision

LENGTH = 50_000

# Each pattern with a text that makes a backtracking engine try every way to split it.
CATASTROPHIC = [
    pytest.param(r"(.|\s)*x", " " * LENGTH, id="overlapping-alternatives-star"),
    pytest.param(r"(a|a)*b", "a" * LENGTH, id="identical-alternatives"),
    pytest.param(r"(a|aa)+$", "a" * LENGTH + "!", id="overlapping-alternatives-plus"),
]


def _seconds(action: Any) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


@pytest.mark.parametrize(("pattern", "text"), CATASTROPHIC)
def test_formerly_catastrophic_pattern_searches_a_long_text_in_linear_time(
    pattern: str, text: str
) -> None:
    compiled = compile_pattern(pattern)
    assert compiled.pattern == pattern
    assert _seconds(lambda: compiled.search(text)) < 0.5


@pytest.mark.parametrize(("pattern", "text"), CATASTROPHIC)
def test_formerly_catastrophic_args_pattern_loads_and_decides_promptly(
    pattern: str, text: str
) -> None:
    policy = (
        f"[[rule]]\ntoolName = 'note'\nargsPattern = '{pattern}'\ndecision = 'deny'\npriority = 1\n"
    )
    loaded = load_policy_text(policy, source="p.toml")
    assert loaded.errors == []
    engine = PolicyEngine(loaded.rules)
    results: list[PolicyDecision] = []
    elapsed = _seconds(lambda: results.append(engine.evaluate("note", {"note": text}).decision))
    assert elapsed < 0.5
    assert results == [PolicyDecision.ASK_USER]  # none of them matches its text
    # ...and each still means what it says on a text it does match.
    hit = {"(.|\\s)*x": " x", "(a|a)*b": "aab", "(a|aa)+$": "aaa"}[pattern]
    assert compile_pattern(pattern).search(hit) is not None


def test_nested_quantifier_built_by_the_package_still_searches_in_linear_time() -> None:
    compiled = compile_pattern(r"(a+)+$", allow_nested=True)
    assert _seconds(lambda: compiled.search("a" * LENGTH + "!")) < 0.5
    assert compiled.search("aaa") is not None


def test_formerly_catastrophic_command_regex_decides_a_long_command_promptly() -> None:
    policy = "[[rule]]\ntoolName = 'shell_cmd'\ncommandRegex = '^echo (a|aa)+$'\ndecision = 'allow'\npriority = 1\n"
    engine = PolicyEngine(load_policy_text(policy, source="p.toml").rules)
    command = "echo " + "a" * 5_000 + "!"
    elapsed = _seconds(lambda: engine.evaluate("shell_cmd", {"command": command}))
    assert elapsed < 0.5
    assert engine.evaluate("shell_cmd", {"command": command}).decision is PolicyDecision.ASK_USER
    assert engine.evaluate("shell_cmd", {"command": "echo aaa"}).decision is PolicyDecision.ALLOW


def test_search_returns_a_match_or_none() -> None:
    compiled = compile_pattern(r'"path":"/etc/')
    assert compiled.search('{\x00"path":"/tmp/x"\x00}') is None
    assert compiled.search('{\x00"path":"/etc/passwd"\x00}') is not None


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        pytest.param(r"(?i)secret", '"KEY":"SeCrEt"', True, id="case-insensitive-flag"),
        pytest.param(r"^rm\b", "rm -rf x", True, id="word-boundary"),
        pytest.param(r"^rm\b", "rmdir x", False, id="word-boundary-refuses-longer-word"),
        pytest.param(r'\x00"command":"rm ', '{\x00"command":"rm -rf /"\x00}', True, id="nul-anchored-pair"),
        pytest.param(r"caf.", '"name":"café"', True, id="dot-matches-one-code-point"),
        pytest.param(r"^\d+$", "123", True, id="anchored-digits"),
    ],
)  # fmt: skip
def test_common_pattern_syntax_means_the_same_on_re2(pattern: str, text: str, found: bool) -> None:
    assert (compile_pattern(pattern).search(text) is not None) is found


def test_policy_test_cli_decides_a_formerly_catastrophic_pattern_promptly(
    cli: Any, tmp_path: Path
) -> None:
    policy = tmp_path / "redos.toml"
    policy.write_text(
        "[[rule]]\ntoolName = 'note'\nargsPattern = '(a|aa)+$'\ndecision = 'deny'\npriority = 1\n"
    )
    arguments = json.dumps({"note": "a" * LENGTH + "!"})
    start = time.perf_counter()
    result = cli("policy", "test", "--tool", "note", "--args", arguments, "--policy", str(policy),
                 "--json", timeout=30)  # fmt: skip
    assert time.perf_counter() - start < 20  # a subprocess start, not an exponential search
    assert result.json()["decision"] == "ASK_USER"


def test_policy_test_cli_refuses_a_backreference_in_one_line(cli: Any, tmp_path: Path) -> None:
    policy = tmp_path / "backref.toml"
    policy.write_text(
        "[[rule]]\ntoolName = 'note'\nargsPattern = '(a)\\1'\ndecision = 'deny'\npriority = 1\n"
    )
    result = cli(
        "policy", "test", "--tool", "note", "--args", "{}", "--policy", str(policy), check=False
    )
    assert result.code != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{policy}, rule 1: regex_compilation: " in lines[0]
    assert "invalid escape sequence" in lines[0]


def test_a_refused_pattern_with_a_newline_is_reported_on_one_line() -> None:
    loaded = load_policy_text(
        '[[rule]]\ntoolName = "t"\nargsPattern = """(a\nb"""\ndecision = "deny"\npriority = 1\n',
        source="p.toml",
    )
    (error,) = loaded.errors
    assert error.type == "regex_compilation"
    assert "\n" not in str(error) and "missing )" in str(error)
