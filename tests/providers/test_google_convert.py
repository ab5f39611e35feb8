"""The pure Gemini conversions: messages to contents, responses to one ``LLMResponse``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types

from agentworld.models import ToolCall, Usage
from agentworld.providers.base import LLMRequest, PromptMessage, ToolSpec
from agentworld.providers.google_convert import (
    SKIP_SIGNATURE,
    SYNTHETIC_ID_PREFIX,
    ResponseAssembler,
    fingerprint,
    is_synthetic_id,
    synthetic_id,
    to_config,
    to_contents,
    wants_thought_signatures,
)


def wire(contents: list[types.Content]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json", exclude_none=True) for c in contents]


def chunk(
    *parts: dict[str, Any], usage: dict[str, int] | None = None, **extra: Any
) -> types.GenerateContentResponse:
    body: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": list(parts)}}]}
    if usage is not None:
        body["usageMetadata"] = usage
    return types.GenerateContentResponse.model_validate(body | extra)


def test_system_messages_join_the_system_instruction_and_empty_turns_are_dropped() -> None:
    system, contents = to_contents(
        [
            PromptMessage(role="system", content="A"),
            PromptMessage(role="user", content="hi"),
            PromptMessage(role="assistant", content=""),  # Gemini refuses a turn without parts
            PromptMessage(role="system", content="B"),
            PromptMessage(role="user", content=None),
        ]
    )
    assert system == "A\n\nB"
    assert wire(contents) == [{"role": "user", "parts": [{"text": "hi"}]}]


def test_no_system_message_means_no_system_instruction() -> None:
    assert to_contents([PromptMessage(role="user", content="x")])[0] is None


def test_consecutive_tool_results_are_one_user_turn_and_a_later_user_message_is_another() -> None:
    calls = (ToolCall.of("a", "f", "{}"), ToolCall.of("b", "g", "{}"))
    _, contents = to_contents(
        [
            PromptMessage(role="assistant", tool_calls=calls),
            PromptMessage(role="tool", content="1", tool_call_id="a"),
            PromptMessage(role="tool", content="[1, 2]", tool_call_id="b"),
            PromptMessage(role="user", content="and now?"),
        ],
        model="gemini-2.5-flash",
    )
    assert wire(contents)[1:] == [
        {
            "role": "user",
            "parts": [
                {"function_response": {"id": "a", "name": "f", "response": {"result": 1}}},
                {"function_response": {"id": "b", "name": "g", "response": {"result": [1, 2]}}},
            ],
        },
        {"role": "user", "parts": [{"text": "and now?"}]},
    ]


@pytest.mark.parametrize(
    ("content", "response"),
    [
        ('{"ok": true}', {"ok": True}),
        ('{"error": "denied"}', {"error": "denied"}),
        ("plain text", {"result": "plain text"}),
        ('"quoted"', {"result": "quoted"}),
        ("", {"result": ""}),
        (None, {"result": ""}),
        ('{"n": NaN}', {"result": '{"n": NaN}'}),
    ],
)
def test_tool_result_content_becomes_a_response_object(content: str | None, response: Any) -> None:
    _, contents = to_contents(
        [
            PromptMessage(role="assistant", tool_calls=(ToolCall.of("a", "f"),)),
            PromptMessage(role="tool", content=content, tool_call_id="a"),
        ]
    )
    assert contents[1].parts is not None
    function_response = contents[1].parts[0].function_response
    assert function_response is not None and function_response.response == response


def test_a_result_without_its_call_becomes_text() -> None:
    _, contents = to_contents([PromptMessage(role="tool", content="42", tool_call_id="gone")])
    assert wire(contents) == [
        {"role": "user", "parts": [{"text": "[result of tool call gone]\n42"}]}
    ]


@pytest.mark.parametrize(
    ("arguments", "args"),
    [
        ('{"a": [1]}', {"a": [1]}),
        ("not json", {"arguments": "not json"}),
        ("[1]", {"arguments": [1]}),
        ("", {}),
        ('{"timeout": -Infinity}', {"arguments": '{"timeout": -Infinity}'}),
    ],
)
def test_call_arguments_become_an_object(arguments: str, args: dict[str, Any]) -> None:
    _, contents = to_contents(
        [PromptMessage(role="assistant", tool_calls=(ToolCall.of("x", "f", arguments),))]
    )
    assert contents[0].parts is not None and contents[0].parts[0].function_call is not None
    assert contents[0].parts[0].function_call.args == args


def test_synthetic_ids_are_not_sent_but_still_name_the_results() -> None:
    made_up = SYNTHETIC_ID_PREFIX + "0123456789abcdef"
    _, contents = to_contents(
        [
            PromptMessage(role="assistant", tool_calls=(ToolCall.of(made_up, "f"),)),
            PromptMessage(role="tool", content="1", tool_call_id=made_up),
        ],
        model="gemini-2.0-flash",
    )
    assert wire(contents) == [
        {"role": "model", "parts": [{"function_call": {"name": "f", "args": {}}}]},
        {
            "role": "user",
            "parts": [{"function_response": {"name": "f", "response": {"result": 1}}}],
        },
    ]


@pytest.mark.parametrize(
    ("model", "wanted"),
    [
        ("gemini-3-pro-preview", True),
        ("models/gemini-3.1-flash", True),
        ("gemini-flash-latest", True),
        ("gemini-2.5-flash", False),
        ("models/gemini-2.0-flash", False),
        ("gemini-1.5-pro", False),
        ("gemma-3-27b-it", False),
    ],
)
def test_which_models_get_the_signature_placeholder(model: str, wanted: bool) -> None:
    assert wants_thought_signatures(model) is wanted


def test_only_the_first_call_of_each_model_turn_is_signed() -> None:
    calls = (ToolCall.of("a", "f"), ToolCall.of("b", "g"))
    _, contents = to_contents(
        [
            PromptMessage(role="assistant", content="thinking", tool_calls=calls),
            PromptMessage(role="tool", content="1", tool_call_id="a"),
            PromptMessage(role="tool", content="2", tool_call_id="b"),
            PromptMessage(role="assistant", tool_calls=(ToolCall.of("c", "f"),)),
        ],
        model="gemini-3-flash",
    )
    signatures = [[p.thought_signature for p in c.parts or []] for c in contents]
    assert signatures == [[None, SKIP_SIGNATURE, None], [None, None], [SKIP_SIGNATURE]]


def test_config_declares_tools_with_their_json_schema_and_disables_automatic_calling() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}}
    request = LLMRequest(model="m", messages=[], tools=[ToolSpec("f", "F.", schema)], temperature=0)
    config = to_config(request, "sys")
    assert config.system_instruction == "sys"
    assert config.temperature == 0 and config.max_output_tokens is None
    assert config.automatic_function_calling == types.AutomaticFunctionCallingConfig(disable=True)
    assert config.tools is not None
    (tool,) = config.tools
    assert isinstance(tool, types.Tool) and tool.function_declarations is not None
    (declaration,) = tool.function_declarations
    assert (declaration.name, declaration.description) == ("f", "F.")
    assert declaration.parameters_json_schema == schema
    assert to_config(LLMRequest(model="m", messages=[]), None).tools is None


def test_synthetic_ids_are_deterministic_and_differ_by_position_and_conversation() -> None:
    seed = fingerprint(LLMRequest(model="m", messages=[PromptMessage(role="user", content="a")]))
    other = fingerprint(LLMRequest(model="m", messages=[PromptMessage(role="user", content="b")]))
    first = synthetic_id(seed, 0, "f", "{}")
    assert first == synthetic_id(seed, 0, "f", "{}")
    assert len({first, synthetic_id(seed, 1, "f", "{}"), synthetic_id(other, 0, "f", "{}")}) == 3
    assert is_synthetic_id(first) and not is_synthetic_id("call_abc") and not is_synthetic_id(None)


def test_assembler_collects_text_calls_and_the_last_usage() -> None:
    assembler = ResponseAssembler(seed="s")
    assert assembler.add(chunk({"text": "Hel"}, usage={"promptTokenCount": 4})) == ["Hel"]
    assert assembler.add(chunk({"text": "lo"}, {"text": "!"})) == ["lo", "!"]
    assembler.add(chunk({"functionCall": {"name": "f", "args": {"q": "é"}}}))
    assembler.add(
        chunk(
            {"functionCall": {"name": "g", "id": "given"}},
            usage={"promptTokenCount": 4, "candidatesTokenCount": 6, "thoughtsTokenCount": 10},
            modelVersion="gemini-x",
        )
    )
    response = assembler.response()
    assert response.type == "tool_calls" and response.content == "Hello!"
    assert response.usage == Usage(input_tokens=4, output_tokens=16)  # thinking is billed output
    assert response.model == "gemini-x"
    first, second = response.tool_calls
    assert first == ToolCall.of(synthetic_id("s", 0, "f", '{"q": "é"}'), "f", '{"q": "é"}')
    assert json.loads(first.function.arguments) == {"q": "é"}
    assert second == ToolCall.of("given", "g", "{}")


def test_assembler_skips_thought_parts_and_empty_chunks() -> None:
    assembler = ResponseAssembler(seed="s")
    assert assembler.add(chunk({"text": "pondering", "thought": True}, {"text": "answer"})) == [
        "answer"
    ]
    assert assembler.add(types.GenerateContentResponse()) == []
    response = assembler.response()
    assert (response.type, response.content, response.tool_calls) == ("text", "answer", [])


def test_assembler_records_a_blocked_prompt() -> None:
    assembler = ResponseAssembler(seed="s")
    assembler.add(
        types.GenerateContentResponse.model_validate({"promptFeedback": {"blockReason": "SAFETY"}})
    )
    assert assembler.blocked == "SAFETY"
    assert assembler.response().content == ""
    assert not assembler.finished  # no candidate: a refusal, which the provider tells apart


def test_assembler_is_finished_only_once_a_candidate_carries_its_finish_reason() -> None:
    assembler = ResponseAssembler(seed="s")
    assembler.add(chunk({"text": "Hello wor"}))
    assert not assembler.finished
    assembler.add(
        types.GenerateContentResponse.model_validate(
            {"candidates": [{"content": {"parts": [{"text": "ld"}]}, "finishReason": "STOP"}]}
        )
    )
    assert assembler.finished
    assembler.add(types.GenerateContentResponse())  # a trailing chunk does not undo it
    assert assembler.finished
