"""StreamAssembler: OpenAI stream deltas in, one LLMResponse out (SPEC L2, L4). No I/O."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionChunk

from agentworld.models import LLMResponse, ToolCall, Usage
from agentworld.providers.openai_stream import StreamAssembler


def test_empty_stream_is_an_empty_text_response() -> None:
    assert StreamAssembler().response() == LLMResponse(type="text", content="")


def test_text_fragments_and_usage_make_a_text_response() -> None:
    assembler = StreamAssembler(model="gpt-test")
    for fragment in ["Hel", "lo, ", "", "world", "!"]:
        assembler.add_text(fragment)
    assembler.set_usage(12, 4)

    assert assembler.response() == LLMResponse(
        type="text",
        content="Hello, world!",
        usage=Usage(input_tokens=12, output_tokens=4),
        model="gpt-test",
    )


def test_last_usage_report_wins() -> None:
    assembler = StreamAssembler()
    assembler.set_usage(1, 1)
    assembler.set_usage(30, 7)

    assert assembler.response().usage == Usage(input_tokens=30, output_tokens=7)


def test_interleaved_fragments_of_two_calls_are_kept_apart_by_index() -> None:
    assembler = StreamAssembler()
    assembler.add_tool_fragment(0, id="call_a", name="read_file", arguments='{"pa')
    assembler.add_tool_fragment(1, id="call_b", name="shell_cmd", arguments="")
    assembler.add_tool_fragment(1, id=None, name=None, arguments='{"command"')
    assembler.add_tool_fragment(0, id=None, name=None, arguments='th": "a.txt"')
    assembler.add_tool_fragment(1, id=None, name=None, arguments=': "ls"}')
    assembler.add_tool_fragment(0, id=None, name=None, arguments="}")

    response = assembler.response()

    assert response.type == "tool_calls"
    assert response.tool_calls == [
        ToolCall.of("call_a", "read_file", '{"path": "a.txt"}'),
        ToolCall.of("call_b", "shell_cmd", '{"command": "ls"}'),
    ]


def test_calls_are_ordered_by_index_not_by_arrival() -> None:
    assembler = StreamAssembler()
    assembler.add_tool_fragment(2, id="c2", name="third", arguments="{}")
    assembler.add_tool_fragment(0, id="c0", name="first", arguments="{}")
    assembler.add_tool_fragment(1, id="c1", name="second", arguments="{}")

    assert [c.id for c in assembler.response().tool_calls] == ["c0", "c1", "c2"]


def test_name_only_in_first_fragment_is_kept() -> None:
    assembler = StreamAssembler()
    assembler.add_tool_fragment(0, id="call_1", name="get_weather", arguments=None)
    assembler.add_tool_fragment(0, id=None, name=None, arguments='{"city":')
    assembler.add_tool_fragment(0, id=None, name="", arguments=' "Oslo"}')

    [call] = assembler.response().tool_calls
    assert call.function.name == "get_weather"
    assert call.function.arguments == '{"city": "Oslo"}'


def test_a_later_fragment_does_not_rename_a_call() -> None:
    # Some compatible servers repeat the name on later fragments; the first one stands.
    assembler = StreamAssembler()
    assembler.add_tool_fragment(0, id="call_1", name="get_weather", arguments="{}")
    assembler.add_tool_fragment(0, id="call_1", name="get_weather", arguments=None)
    assembler.add_tool_fragment(0, id=None, name="weather", arguments=None)

    [call] = assembler.response().tool_calls
    assert call.function.name == "get_weather"
    assert call.id == "call_1"


def test_missing_ids_get_stable_distinct_fallbacks() -> None:
    def assemble() -> list[ToolCall]:
        assembler = StreamAssembler()
        assembler.add_tool_fragment(0, id=None, name="a", arguments="{}")
        assembler.add_tool_fragment(1, id=None, name="b", arguments="{}")
        return assembler.response().tool_calls

    first, second = assemble(), assemble()

    assert [c.id for c in first] == [c.id for c in second]  # stable across runs
    assert all(c.id for c in first)  # never empty
    assert len({c.id for c in first}) == 2  # distinct per call
    assert [c.id for c in first] == ["call_0", "call_1"]


def test_id_arriving_on_a_later_fragment_is_used() -> None:
    assembler = StreamAssembler()
    assembler.add_tool_fragment(0, id=None, name="a", arguments="{")
    assembler.add_tool_fragment(0, id="call_late", name=None, arguments="}")

    [call] = assembler.response().tool_calls
    assert call.id == "call_late"


def test_call_without_arguments_gets_empty_object() -> None:
    assembler = StreamAssembler()
    assembler.add_tool_fragment(0, id="c", name="get_time", arguments=None)
    assembler.add_tool_fragment(0, id=None, name=None, arguments="")

    [call] = assembler.response().tool_calls
    assert call.function.arguments == "{}"


def test_text_next_to_tool_calls_is_kept_with_usage() -> None:
    assembler = StreamAssembler(model="m")
    assembler.add_text("Checking ")
    assembler.add_text("now.")
    assembler.add_tool_fragment(0, id="c", name="get_time", arguments="{}")
    assembler.set_usage(5, 6)

    assert assembler.response() == LLMResponse(
        type="tool_calls",
        content="Checking now.",
        tool_calls=[ToolCall.of("c", "get_time", "{}")],
        usage=Usage(input_tokens=5, output_tokens=6),
        model="m",
    )


@st.composite
def split_text(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A string and an arbitrary split of it into consecutive fragments (some empty)."""
    text = draw(st.text(min_size=1))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=20)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@given(split_text(), split_text())
def test_any_split_of_arguments_reassembles_exactly(
    a: tuple[str, list[str]], b: tuple[str, list[str]]
) -> None:
    (args_a, frags_a), (args_b, frags_b) = a, b
    assembler = StreamAssembler()
    assembler.add_tool_fragment(0, id="call_a", name="tool_a", arguments=None)
    assembler.add_tool_fragment(1, id="call_b", name="tool_b", arguments=None)
    # Interleave the two calls' fragments, as parallel calls may arrive.
    for n in range(max(len(frags_a), len(frags_b))):
        if n < len(frags_a):
            assembler.add_tool_fragment(0, id=None, name=None, arguments=frags_a[n])
        if n < len(frags_b):
            assembler.add_tool_fragment(1, id=None, name=None, arguments=frags_b[n])

    call_a, call_b = assembler.response().tool_calls

    assert call_a.function.arguments == args_a
    assert call_b.function.arguments == args_b


@given(split_text())
def test_any_split_of_text_reassembles_exactly(case: tuple[str, list[str]]) -> None:
    text, fragments = case
    assembler = StreamAssembler()
    for fragment in fragments:
        assembler.add_text(fragment)

    assert assembler.response().content == text


def test_stream_is_finished_only_once_a_choice_carries_its_finish_reason() -> None:
    def chunk(delta: dict[str, object], finish: str | None = None) -> ChatCompletionChunk:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return ChatCompletionChunk.model_validate(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [choice],
            }
        )

    assembler = StreamAssembler()
    assert assembler.feed(chunk({"role": "assistant", "content": "Hello wor"}), endpoint="e") == ["Hello wor"]
    assert not assembler.finished
    assembler.feed(chunk({"content": "ld"}, "stop"), endpoint="e")

    assert assembler.finished
    assert assembler.response().content == "Hello world"
