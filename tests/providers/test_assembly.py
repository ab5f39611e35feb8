"""PartsAssembler: the one stream assembler every provider shares (SPEC L2, L4). No I/O."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworld.models import LLMResponse, ToolCall, Usage
from agentworld.providers.assembly import (
    TEXT_KEY,
    ArgumentsMode,
    PartsAssembler,
    arguments_text,
    finish_arguments,
)


def test_nothing_assembled_is_an_empty_text_response() -> None:
    assert PartsAssembler().response() == LLMResponse(type="text", content="")


def test_text_and_calls_make_one_response_with_usage_and_model() -> None:
    parts = PartsAssembler(model="m")
    parts.add_text(TEXT_KEY, "Checking ")
    parts.add_tool_call(0, id="c", name="get_time", arguments="{}")
    parts.add_text(TEXT_KEY, "now.")
    parts.set_usage(input_tokens=5, output_tokens=6)

    assert parts.response() == LLMResponse(
        type="tool_calls",
        content="Checking now.",
        tool_calls=[ToolCall.of("c", "get_time", "{}")],
        usage=Usage(input_tokens=5, output_tokens=6),
        model="m",
    )


# --- ordering ----------------------------------------------------------------------------------


def test_parts_are_ordered_by_key_not_by_arrival() -> None:
    parts = PartsAssembler()
    parts.add_text(3, "c")
    parts.add_tool_call(2, id="t2", name="second")
    parts.add_text(1, "a")
    parts.add_tool_call(0, id="t0", name="first")
    parts.add_text(TEXT_KEY, ">")

    response = parts.response()

    assert response.content == ">ac"  # the unindexed text comes first
    assert [c.id for c in response.tool_calls] == ["t0", "t2"]


def test_interleaved_fragments_are_kept_apart_by_key() -> None:
    parts = PartsAssembler()
    parts.add_tool_call(0, id="a", name="read_file", arguments='{"pa')
    parts.add_tool_call(1, id="b", name="shell_cmd", arguments='{"command"')
    parts.add_tool_call(0, arguments='th": "a.txt"}')
    parts.add_tool_call(1, arguments=': "ls"}')

    assert parts.response().tool_calls == [
        ToolCall.of("a", "read_file", '{"path": "a.txt"}'),
        ToolCall.of("b", "shell_cmd", '{"command": "ls"}'),
    ]


# --- opening and replacing parts ---------------------------------------------------------------


def test_a_fragment_opens_a_part_of_its_own_kind() -> None:
    parts = PartsAssembler()
    assert parts.add_text(0, "hi") == "hi"
    parts.add_tool_call(1, arguments='{"x": 1}')

    response = parts.response()
    assert response.content == "hi"
    assert response.tool_calls == [ToolCall.of("", "", '{"x": 1}')]


def test_a_fragment_for_a_part_of_another_kind_is_dropped() -> None:
    parts = PartsAssembler()
    parts.start_tool_call(0, id="t", name="f")
    parts.start_text(1)

    assert parts.add_text(0, "stray") == ""  # not echoed either
    parts.add_tool_call(1, id="x", name="g", arguments="{}")

    response = parts.response()
    assert response.content == ""
    assert response.tool_calls == [ToolCall.of("t", "f", "{}")]


def test_an_ignored_part_drops_every_fragment() -> None:
    parts = PartsAssembler()
    parts.start_ignored(0)

    assert parts.add_text(0, "thinking") == ""
    parts.add_tool_call(0, id="t", name="f", arguments="{}")

    assert parts.response() == LLMResponse(type="text", content="")


@pytest.mark.parametrize("kind", ["text", "tool_call", "ignored"])
def test_starting_a_part_replaces_whatever_had_the_key(kind: str) -> None:
    parts = PartsAssembler()
    parts.add_text(0, "old text")
    parts.add_tool_call(1, id="old", name="old", arguments='{"old": 1}')
    for key in (0, 1):
        if kind == "text":
            parts.start_text(key)
        elif kind == "tool_call":
            parts.start_tool_call(key, id=f"new{key}", name="new")
        else:
            parts.start_ignored(key)

    response = parts.response()

    assert response.content == ""
    if kind == "tool_call":
        assert response.tool_calls == [
            ToolCall.of("new0", "new", "{}"),
            ToolCall.of("new1", "new", "{}"),
        ]
    else:
        assert response.tool_calls == []


def test_a_started_text_part_grows_by_fragments() -> None:
    parts = PartsAssembler()
    parts.start_text(0)
    assert parts.add_text(0, "Hel") == "Hel"
    assert parts.add_text(0, "") == ""
    assert parts.add_text(0, "lo") == "lo"

    assert parts.response().content == "Hello"


# --- tool-call fragments -----------------------------------------------------------------------


def test_the_first_name_stands_and_empty_names_are_no_name() -> None:
    parts = PartsAssembler()
    parts.add_tool_call(0, name="")
    parts.add_tool_call(0, name="get_weather")
    parts.add_tool_call(0, name="weather")

    [call] = parts.response().tool_calls
    assert call.function.name == "get_weather"


def test_a_later_id_replaces_an_earlier_one_and_empty_ids_change_nothing() -> None:
    parts = PartsAssembler()
    parts.add_tool_call(0, id="first")
    parts.add_tool_call(0, id="")
    parts.add_tool_call(0, id=None)
    assert parts.response().tool_calls[0].id == "first"

    parts.add_tool_call(0, id="second")
    assert parts.response().tool_calls[0].id == "second"


def test_a_started_call_keeps_its_id_and_name_through_fragments() -> None:
    parts = PartsAssembler()
    parts.start_tool_call(0, id="t", name="f")
    parts.add_tool_call(0, arguments='{"x":')
    parts.add_tool_call(0, arguments="")
    parts.add_tool_call(0, arguments=" 1}")

    assert parts.response().tool_calls == [ToolCall.of("t", "f", '{"x": 1}')]


def test_missing_ids_come_from_the_fallback_with_key_name_and_finished_arguments() -> None:
    seen: list[tuple[int, str, str]] = []

    def fallback(key: int, name: str, arguments: str) -> str:
        seen.append((key, name, arguments))
        return f"made_{key}"

    parts = PartsAssembler(fallback_id=fallback)
    parts.add_tool_call(4, name="f")
    parts.add_tool_call(7, id="given", name="g")

    assert [c.id for c in parts.response().tool_calls] == ["made_4", "given"]
    assert seen == [(4, "f", "{}")]  # only asked for the call that needs it


def test_an_id_arriving_late_wins_over_the_fallback() -> None:
    parts = PartsAssembler(fallback_id=lambda key, name, arguments: "fallback")
    parts.add_tool_call(0, name="a", arguments="{")
    assert parts.response().tool_calls[0].id == "fallback"

    parts.add_tool_call(0, id="late", arguments="}")
    assert parts.response().tool_calls[0].id == "late"


def test_without_a_fallback_a_call_missing_its_id_keeps_the_empty_id() -> None:
    parts = PartsAssembler()
    parts.add_tool_call(0, name="f")

    assert parts.response().tool_calls[0].id == ""


# --- finishing arguments -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "text", "expected"),
    [
        ("verbatim", "", "{}"),
        ("verbatim", "  ", "  "),
        ("verbatim", '{"a":1}', '{"a":1}'),
        ("verbatim", '{"a": ', '{"a": '),
        ("json", "", "{}"),
        ("json", " \n", "{}"),
        ("json", '{"a":1,"b":[true,null]}', '{"a": 1, "b": [true, null]}'),
        ("json", '{"q":"\\u00e9"}', '{"q": "é"}'),
        ("json", "[1]", "[1]"),
        ("json", '{"a": ', '{"a": '),
    ],
)
def test_finished_arguments_per_mode(mode: ArgumentsMode, text: str, expected: str) -> None:
    assert finish_arguments(text, mode) == expected

    parts = PartsAssembler(arguments=mode)
    parts.add_tool_call(0, id="t", name="f", arguments=text)
    assert parts.response().tool_calls[0].function.arguments == expected


def test_arguments_text_keeps_non_ascii_and_round_trips_through_json_mode() -> None:
    value = {"q": "é", "n": [1, 2.5, None], "nested": {"ok": True}}
    text = arguments_text(value)

    assert "é" in text and json.loads(text) == value
    assert finish_arguments(text, "json") == text


# --- usage and model ---------------------------------------------------------------------------


def test_a_usage_count_left_out_keeps_its_last_value() -> None:
    parts = PartsAssembler()
    parts.set_usage(input_tokens=10, output_tokens=1)
    parts.set_usage(output_tokens=42)
    assert parts.response().usage == Usage(input_tokens=10, output_tokens=42)

    parts.set_usage(input_tokens=12)
    assert parts.response().usage == Usage(input_tokens=12, output_tokens=42)


def test_model_is_whatever_the_adapter_last_set() -> None:
    parts = PartsAssembler(model="a")
    parts.model = "b"

    assert parts.response().model == "b"


def test_reading_the_response_changes_nothing() -> None:
    parts = PartsAssembler(fallback_id=lambda key, name, arguments: f"id{key}")
    parts.add_text(TEXT_KEY, "t")
    parts.add_tool_call(0, name="f", arguments='{"a": 1}')

    assert parts.response() == parts.response()


# --- any fragmentation reassembles -------------------------------------------------------------


@st.composite
def split_text(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A string and an arbitrary split of it into consecutive fragments (some empty)."""
    text = draw(st.text(min_size=1))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=20)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@given(split_text(), split_text(), split_text())
def test_any_interleaving_of_fragments_reassembles_every_part_exactly(
    text: tuple[str, list[str]], a: tuple[str, list[str]], b: tuple[str, list[str]]
) -> None:
    parts = PartsAssembler()
    parts.start_tool_call(1, id="a", name="tool_a")
    parts.start_tool_call(2, id="b", name="tool_b")
    streams = [(0, text[1]), (1, a[1]), (2, b[1])]
    for n in range(max(len(fragments) for _, fragments in streams)):
        for key, fragments in streams:
            if n < len(fragments):
                if key == 0:
                    parts.add_text(key, fragments[n])
                else:
                    parts.add_tool_call(key, arguments=fragments[n])

    response = parts.response()

    assert response.content == text[0]
    assert [c.function.arguments for c in response.tool_calls] == [a[0], b[0]]


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), st.lists, max_leaves=8))
def test_json_mode_reads_any_split_of_valid_json_as_its_serialisation(value: object) -> None:
    text = json.dumps(value, separators=(",", ":"))
    parts = PartsAssembler(arguments="json")
    parts.start_tool_call(0, id="t", name="f")
    for start in range(0, len(text), 3):
        parts.add_tool_call(0, arguments=text[start : start + 3])

    assert parts.response().tool_calls[0].function.arguments == arguments_text(value)
