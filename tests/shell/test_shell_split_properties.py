"""Property tests for shell command splitting (SPEC §2.7 P4): no joined command hides from the policy."""

from __future__ import annotations

import re
import shlex

from hypothesis import given
from hypothesis import strategies as st

from agentworld.shell.commands import prefix_match
from agentworld.shell.split import (
    CommandPart,
    UnparseableCommand,
    parse_command,
    prefix_words,
)

RESERVED = {
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
    "do", "done", "in", "function", "time", "coproc",
}  # fmt: skip
OPERATORS = ["&&", "||", ";", "&", "|", "|&", "\n", " && ", " ; ", " | "]

names = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True).filter(lambda w: w not in RESERVED)
args = st.from_regex(r"[A-Za-z0-9_./=-]{1,10}", fullmatch=True)
simple_commands = st.tuples(names, st.lists(args, max_size=3))
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# Any text but lone surrogates; control characters other than tab and newline are refused.
any_text = st.text(st.characters(blacklist_categories=("Cs",)))
plain_text = any_text.filter(lambda t: not CONTROL.search(t))


@given(st.lists(simple_commands, min_size=1, max_size=6), st.data())
def test_every_joined_command_root_is_seen(
    commands: list[tuple[str, list[str]]], data: st.DataObject
) -> None:
    line = " ".join([commands[0][0], *commands[0][1]])
    for name, rest in commands[1:]:
        line += data.draw(st.sampled_from(OPERATORS)) + " ".join([name, *rest])
    parsed = parse_command(line)
    argvs = [p.argv for p in parsed.parts]
    for name, rest in commands:
        assert name in parsed.roots
        assert (name, *rest) in argvs  # no word of one command is glued to another


@given(st.lists(simple_commands, min_size=1, max_size=4), st.sampled_from(["$(", "`", "( ", "{ "]))
def test_nested_command_roots_are_seen(commands: list[tuple[str, list[str]]], opener: str) -> None:
    closer = {"$(": ")", "`": "`", "( ": " )", "{ ": "; }"}[opener]
    inner = " && ".join(" ".join([name, *rest]) for name, rest in commands)
    line = f"echo {opener}{inner}{closer}" if opener in ("$(", "`") else opener + inner + closer
    seen = parse_command(line).roots
    for name, _ in commands:
        assert name in seen


@given(plain_text)
def test_a_quoted_string_is_always_one_word(text: str) -> None:
    parsed = parse_command(f"echo {shlex.quote(text)}")
    assert len(parsed.parts) == 1
    assert parsed.parts[0].argv == ("echo", text)


@given(any_text)
def test_a_quoted_string_never_splits_even_with_control_characters(text: str) -> None:
    try:
        parsed = parse_command(f"echo {shlex.quote(text)}")
    except UnparseableCommand:
        assert CONTROL.search(text)
    else:
        assert [p.argv for p in parsed.parts] == [("echo", text)]


@given(st.lists(plain_text, min_size=1, max_size=4))
def test_quoted_parameters_round_trip(words: list[str]) -> None:
    parsed = parse_command(shlex.join(["printf", *words]))
    assert parsed.parts[0].argv == ("printf", *words)
    assert parsed.roots == ("printf",)


static_names = any_text.filter(
    lambda w: w != "" and not set(w) & set("$`*?[{") and not w.startswith("~")
)


@given(static_names, st.lists(any_text, max_size=4), any_text)
def test_prefix_of_the_whole_argv_matches_and_one_word_more_does_not(
    name: str, rest: list[str], extra: str
) -> None:
    argv = [name, *rest]
    # Quoted words (shlex.join quotes them): each is literal, whatever it holds.
    p = CommandPart(tuple(argv), shlex.join(argv), False, literal=(True,) * len(argv))
    assert prefix_match(p, prefix_words(shlex.join(argv)), by_basename=False) == "yes"
    assert prefix_match(p, prefix_words(shlex.join([*argv, extra])), by_basename=False) == "no"


@given(any_text, any_text, st.lists(any_text, max_size=3))
def test_a_command_name_built_by_expansion_matches_no_prefix(
    before: str, after: str, rest: list[str]
) -> None:
    argv = (f"{before}$X{after}", *rest)
    p = CommandPart(argv, shlex.join(argv), False)
    assert prefix_match(p, prefix_words(shlex.join(argv)), by_basename=False) == "maybe"
