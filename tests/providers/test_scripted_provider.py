"""The offline scripted provider (SPEC L7): echo, file scripts, streaming and usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.errors import InvalidInputError
from agentworld.models import LLMResponse, ToolCall, Usage
from agentworld.providers.base import LLMRequest, PromptMessage
from agentworld.providers.scripted import MOST_PIECES, ScriptedProvider, responder_for_model


def request(*messages: PromptMessage) -> LLMRequest:
    return LLMRequest(model="echo", messages=messages)


def user(text: str) -> PromptMessage:
    return PromptMessage(role="user", content=text)


def assistant(text: str = "ok") -> PromptMessage:
    return PromptMessage(role="assistant", content=text)


async def test_echo_answers_the_last_user_message() -> None:
    provider = ScriptedProvider()
    try:
        response = await provider.complete(
            request(
                PromptMessage(role="system", content="be nice"),
                user("first"),
                assistant("echo: first"),
                user("second question"),
            )
        )
    finally:
        await provider.aclose()

    assert response.type == "text"
    assert response.content == "echo: second question"
    assert len(provider.requests) == 1


async def test_echo_without_user_message_echoes_nothing() -> None:
    provider = ScriptedProvider(responder_for_model("echo"))
    response = await provider.complete(request(PromptMessage(role="system", content="x")))
    await provider.aclose()

    assert response.content == "echo: "


async def test_usage_is_estimated_when_the_responder_gives_none() -> None:
    provider = ScriptedProvider()
    response = await provider.complete(request(user("three little words")))
    await provider.aclose()

    assert response.usage == Usage(input_tokens=3, output_tokens=4)  # "echo: three little words"
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0


async def test_usage_from_the_responder_is_kept() -> None:
    fixed = Usage(input_tokens=100, output_tokens=42)
    provider = ScriptedProvider(lambda _: LLMResponse.text("hi", usage=fixed))
    response = await provider.complete(request(user("x")))
    await provider.aclose()

    assert response.usage == fixed


@pytest.mark.parametrize("chunk_size", [1, 3, 8, 1000])
async def test_streaming_chunks_join_to_the_content(chunk_size: int) -> None:
    provider = ScriptedProvider(chunk_size=chunk_size)
    fragments: list[str] = []

    response = await provider.complete(
        request(user("a longer sentence to be cut into many pieces")),
        stream=True,
        on_text=fragments.append,
    )
    await provider.aclose()

    assert "".join(fragments) == response.content
    assert response.content == "echo: a longer sentence to be cut into many pieces"
    assert all(0 < len(f) <= chunk_size for f in fragments)
    assert len(fragments) == -(-len(response.content) // chunk_size)


async def test_a_long_reply_streams_in_at_most_so_many_pieces() -> None:
    provider = ScriptedProvider(chunk_size=8)
    fragments: list[str] = []
    message = "x" * 1_000_000

    response = await provider.complete(request(user(message)), stream=True, on_text=fragments.append)

    assert "".join(fragments) == response.content == f"echo: {message}"
    assert len(fragments) == MOST_PIECES
    assert len({len(f) for f in fragments[:-1]}) == 1  # even pieces, the last one shorter


async def test_async_stream_callback_is_awaited() -> None:
    provider = ScriptedProvider(chunk_size=2)
    seen: list[str] = []

    async def on_text(fragment: str) -> None:
        seen.append(fragment)

    response = await provider.complete(request(user("abc")), stream=True, on_text=on_text)
    await provider.aclose()

    assert "".join(seen) == response.content == "echo: abc"


async def test_no_stream_no_callbacks() -> None:
    provider = ScriptedProvider()
    fragments: list[str] = []
    await provider.complete(request(user("quiet")), stream=False, on_text=fragments.append)
    await provider.aclose()

    assert fragments == []


# --- file scripts ----------------------------------------------------------------------------


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(
        json.dumps(
            [
                {
                    "content": "Let me look.",
                    "tool_calls": [
                        {"name": "read_file", "arguments": {"path": "notes.txt"}},
                        {"id": "call_fixed", "name": "shell_cmd", "arguments": {"command": "ls"}},
                    ],
                },
                "Here is the summary.",
                {"content": "Anything else?"},
            ]
        )
    )
    return path


async def test_file_script_advances_by_assistant_turns_and_repeats_the_last(script: Path) -> None:
    provider = ScriptedProvider(responder_for_model(f"file:{script}"))
    history: list[PromptMessage] = [user("summarise notes.txt")]
    try:
        first = await provider.complete(request(*history))

        assert first.type == "tool_calls"
        assert first.content == "Let me look."
        assert first.tool_calls == [
            ToolCall.of("call_0_0", "read_file", json.dumps({"path": "notes.txt"})),
            ToolCall.of("call_fixed", "shell_cmd", json.dumps({"command": "ls"})),
        ]

        history += [
            PromptMessage(role="assistant", tool_calls=tuple(first.tool_calls)),
            PromptMessage(role="tool", content="hello", tool_call_id="call_0_0"),
            PromptMessage(role="tool", content="notes.txt", tool_call_id="call_fixed"),
        ]
        second = await provider.complete(request(*history))
        assert second == LLMResponse(
            type="text", content="Here is the summary.", usage=second.usage
        )

        history += [assistant(second.content), user("thanks")]
        third = await provider.complete(request(*history))
        assert third.type == "text"
        assert third.content == "Anything else?"

        history += [assistant(third.content), user("no")]
        fourth = await provider.complete(request(*history))
        assert fourth.content == "Anything else?"  # the last entry repeats
    finally:
        await provider.aclose()


async def test_file_script_position_depends_only_on_the_input(script: Path) -> None:
    """Two separate providers (two processes) pick the same reply for the same input."""
    messages = (user("a"), assistant(), user("b"))
    answers = []
    for _ in range(2):
        provider = ScriptedProvider(responder_for_model(f"file:{script}"))
        answers.append(await provider.complete(request(*messages)))
        answers.append(await provider.complete(request(*messages)))
        await provider.aclose()

    assert {a.content for a in answers} == {"Here is the summary."}


async def test_file_script_tool_calls_stream_no_text_when_content_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "calls.json"
    path.write_text(json.dumps([{"tool_calls": [{"name": "get_time"}]}]))
    provider = ScriptedProvider(responder_for_model(f"file:{path}"))
    fragments: list[str] = []

    response = await provider.complete(
        request(user("time?")), stream=True, on_text=fragments.append
    )
    await provider.aclose()

    assert response.type == "tool_calls"
    assert response.tool_calls == [ToolCall.of("call_0_0", "get_time", "{}")]
    assert fragments == []


@pytest.mark.parametrize(
    "content",
    ["not json at all", "{}", "[]", '"just a string"'],
    ids=["invalid-json", "object", "empty-list", "string"],
)
def test_bad_script_file_is_invalid_input(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)

    with pytest.raises(InvalidInputError, match=str(path)):
        responder_for_model(f"file:{path}")


def test_missing_script_file_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="cannot read"):
        responder_for_model(f"file:{tmp_path / 'absent.json'}")


@pytest.mark.parametrize(
    ("entries", "said"),
    [
        ([42], "reply 0 must be a string or an object"),
        (["ok", {"contnet": "typo"}], "reply 1 has unknown keys 'contnet'"),
        ([{"content": 7}], "reply 0 content must be a string"),
        ([{"tool_calls": {"name": "x"}}], "reply 0 tool_calls must be a list"),
        ([{"tool_calls": [{"arguments": {}}]}], "reply 0 tool call 0 must be an object with a name"),
        ([{"tool_calls": [{"name": "x", "args": {}}]}], "reply 0 tool call 0 has unknown keys"),
        ([{"tool_calls": [{"name": "x", "arguments": "{}"}]}], "reply 0 tool call 0: arguments must be an object"),
        ([{"tool_calls": [{"name": "x", "id": 3}]}], "reply 0 tool call 0: id must be a string"),
    ],
)
def test_a_bad_script_entry_is_refused_when_the_file_is_read(
    tmp_path: Path, entries: list[Any], said: str
) -> None:
    """``agent create`` reads the file: a reply that could not be given is refused there, not
    turns later as an empty answer or a traceback."""
    path = tmp_path / "entry.json"
    path.write_text(json.dumps(entries))

    with pytest.raises(InvalidInputError) as refused:
        responder_for_model(f"file:{path}")

    assert str(refused.value).startswith(f"scripted model file {path}: {said}")


def test_unknown_scripted_model_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match="echo"):
        responder_for_model("gpt-4o")


async def test_a_scripted_call_with_null_content_is_a_call_without_text(tmp_path: Path) -> None:
    """``"content": null`` beside tool calls is accepted when the agent is created, so it is
    a reply like one without content, not an error at the first turn."""
    path = tmp_path / "replies.json"
    path.write_text(json.dumps([{"content": None, "tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}]}]))
    provider = ScriptedProvider(responder_for_model(f"file:{path}"))
    try:
        response = await provider.complete(request(user("go")))
    finally:
        await provider.aclose()
    assert response.type == "tool_calls" and response.content == ""
