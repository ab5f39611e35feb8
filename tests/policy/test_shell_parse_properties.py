"""Property tests for shell command splitting (SPEC §2.7 P4): no joined command hides from the policy."""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from agentworld.policy.shell import CommandPart, matches_prefix, parse_command

RESERVED = {
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
    "do", "done", "in", "function", "time", "coproc",
}  # fmt: skip
OPERATORS = ["&&", "||", ";", "&", "|", "|&", "\n", " && ", " ; ", " | "]

names = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True).filter(lambda w: w not in RESERVED)
args = st.from_regex(r"[A-Za-z0-9_./=-]{1,10}", fullmatch=True)
simple_commands = st.tuples(names, st.lists(args, max_size=3))
# Text a shell can carry in one word: no NUL (bash cannot pass it) and no lone surrogates.
any_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))


@given(st.lists(simple_commands, min_size=1, max_size=6), st.data())
def test_every_joined_command_root_is_seen(
    commands: list[tuple[str, list[str]]], data: st.DataObject
) -> None:
    line = " ".join([commands[0][0], *commands[0][1]])
    for name, rest in commands[1:]:
        line += data.draw(st.sampled_from(OPERATORS)) + " ".join([name, *rest])
    seen = parse_command(line).roots
    for name, _ in commands:
        assert name in seen


@given(st.lists(simple_commands, min_size=1, max_size=4), st.sampled_from(["$(", "`", "( ", "{ "]))
def test_nested_command_roots_are_seen(
    commands: list[tuple[str, list[str]]], opener: str
) -> None:
    closer = {"$(": ")", "`": "`", "( ": " )", "{ ": "; }"}[opener]
    inner = " && ".join(" ".join([name, *rest]) for name, rest in commands)
    line = f"echo {opener}{inner}{closer}" if opener in ("$(", "`") else opener + inner + closer
    seen = parse_command(line).roots
    for name, _ in commands:
        assert name in seen


@given(any_text)
def test_a_quoted_string_is_always_one_word(text: str) -> None:
    parsed = parse_command(f"echo {shlex.quote(text)}")
    assert len(parsed.parts) == 1
    assert parsed.parts[0].argv == ("echo", text)


@given(st.lists(any_text, min_size=1, max_size=4))
def test_quoted_parameters_round_trip(words: list[str]) -> None:
    parsed = parse_command(shlex.join(["printf", *words]))
    assert parsed.parts[0].argv == ("printf", *words)
    assert parsed.roots == ("printf",)


@given(st.lists(any_text.filter(lambda w: w != ""), min_size=1, max_size=5), any_text)
def test_prefix_of_the_whole_argv_matches_and_one_word_more_does_not(
    argv: list[str], extra: str
) -> None:
    p = CommandPart(tuple(argv), shlex.join(argv), False)
    assert matches_prefix(p, shlex.join(argv))
    assert not matches_prefix(p, shlex.join([*argv, extra]))
