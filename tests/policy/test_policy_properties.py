"""Property tests for the policy engine (SPEC §2.7 P1, P4): key order and chaining never dodge it."""

from __future__ import annotations

import json
import random
import shlex
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision
from agentworld.policy.stringify import PAIR_DELIMITER, stable_stringify

# --- stable stringify ---------------------------------------------------------------

keys = st.text(max_size=8)
scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=25,
)
arguments = st.dictionaries(keys, json_values, max_size=6)


def shuffled(value: Any, rng: random.Random) -> Any:
    """The same value with the keys of every dict, at every depth, inserted in a random order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: shuffled(item, rng) for key, item in items}
    if isinstance(value, list):
        return [shuffled(item, rng) for item in value]
    return value


@given(arguments, st.randoms(use_true_random=False))
def test_stable_stringify_ignores_key_order_at_every_depth(
    args: dict[str, Any], rng: random.Random
) -> None:
    assert stable_stringify(shuffled(args, rng)) == stable_stringify(args)


@given(arguments)
def test_stable_stringify_delimits_each_top_level_pair_and_keeps_the_data(
    args: dict[str, Any],
) -> None:
    text = stable_stringify(args)
    # Two delimiters per top-level pair and none elsewhere: JSON escapes a NUL inside any value.
    assert text.count(PAIR_DELIMITER) == 2 * len(args)
    assert json.loads(text.replace(PAIR_DELIMITER, "")) == args


# --- compound shell commands -----------------------------------------------------------

POLICY = load_policy_text(
    """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["echo", "ls", "git log", "touch"]
decision = "allow"
priority = 100

[[rule]]
toolName = "shell_cmd"
commandPrefix = "rm"
decision = "deny"
priority = 100
""",
    source="properties.toml",
)
assert POLICY.errors == []
ENGINE = PolicyEngine(POLICY.rules)

ALLOWED = ["echo", "echo hi", "ls", "ls -la /tmp", "git log", "git log --oneline", "touch f.txt"]
DENIED = "rm -rf x"
OPERATORS = ["&&", "||", ";", "|", "&", "\n"]
# How one command can be placed in a line: as itself or inside an allowed command.
WRAPPERS = {
    "plain": "{}",
    "substitution": "echo $({})",
    "backticks": "echo `{}`",
}
SHELL_WRAPPERS = ["bash -c", "sh -c"]

allowed_commands = st.sampled_from(ALLOWED)
wrappers = st.sampled_from(sorted(WRAPPERS))


def placed(command: str, wrapper: str) -> str:
    return WRAPPERS[wrapper].format(command)


@st.composite
def allowed_lines(draw: st.DrawFn) -> str:
    """Allowed commands joined by any operators, some inside `$( )` or backticks."""
    items = draw(st.lists(st.tuples(allowed_commands, wrappers), min_size=1, max_size=5))
    line = placed(*items[0])
    for item in items[1:]:
        line += f" {draw(st.sampled_from(OPERATORS))} {placed(*item)}"
    return line


@st.composite
def lines_with_a_denied_command(draw: st.DrawFn) -> str:
    """An allowed line with ``rm -rf x`` spliced in anywhere, by any operator or nesting."""
    items = draw(st.lists(st.tuples(allowed_commands, wrappers), max_size=4))
    denied = (DENIED, draw(wrappers))
    items.insert(draw(st.integers(0, len(items))), denied)
    line = placed(*items[0])
    for item in items[1:]:
        line += f" {draw(st.sampled_from(OPERATORS))} {placed(*item)}"
    if draw(st.booleans()):  # the whole line handed to a shell, or substituted once more
        outer = draw(st.sampled_from([*SHELL_WRAPPERS, "echo $( )"]))
        line = f"echo $({line})" if outer == "echo $( )" else f"{outer} {shlex.quote(line)}"
    return line


@given(lines_with_a_denied_command())
def test_a_denied_command_is_never_allowed_however_it_is_joined(line: str) -> None:
    result = ENGINE.evaluate("shell_cmd", {"command": line})
    assert result.decision is PolicyDecision.DENY, line
    assert result.rule is not None and result.rule.command_prefixes == ("rm",)


@given(lines_with_a_denied_command(), st.sampled_from(["default", "auto_edit", "yolo"]))
def test_a_denied_command_is_denied_in_every_mode(line: str, mode: str) -> None:
    policy = PolicyEngine(POLICY.rules, mode=mode)
    assert policy.evaluate("shell_cmd", {"command": line}).decision is PolicyDecision.DENY


@given(allowed_lines())
def test_a_line_of_only_allowed_commands_is_allowed(line: str) -> None:
    result = ENGINE.evaluate("shell_cmd", {"command": line})
    assert result.decision is PolicyDecision.ALLOW, (line, result.reason)


@given(allowed_lines(), st.sampled_from(["curl x", "python -c 1", "git push"]))
def test_one_unknown_command_makes_an_allowed_line_ask(line: str, unknown: str) -> None:
    result = ENGINE.evaluate("shell_cmd", {"command": f"{line} && {unknown}"})
    assert result.decision is PolicyDecision.ASK_USER, line


@given(allowed_lines(), st.lists(st.text(max_size=20), min_size=1, max_size=3))
def test_parameters_never_add_a_command(line: str, parameters: list[str]) -> None:
    # Parameters are quoted words: whatever they hold, the line's own commands decide.
    result = ENGINE.evaluate("shell_cmd", {"command": line, "parameters": parameters})
    assert result.decision in (PolicyDecision.ALLOW, PolicyDecision.ASK_USER)
    if result.decision is PolicyDecision.ASK_USER:
        # only a line the strict reader refuses (e.g. a control character) asks
        assert "not fully understood" in result.reason
