"""A deterministic, offline provider for demos and for tests of the runtime (SPEC L7).

It is driven either by a Python function (``responder``) or, for agents made on
the command line, by the model string:

- ``echo`` (default): answers ``echo: <last user message>``;
- ``file:PATH``: a JSON list of replies, each ``"text"`` or
  ``{"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}]}``; the
  reply used is picked by how many assistant turns the input already holds, so
  the script advances the same way across separate processes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld.callbacks import maybe_await
from agentworld.errors import InvalidInputError
from agentworld.models import LLMResponse, ToolCall, Usage
from agentworld.providers.base import LLMRequest, TextCallback

Responder = Callable[[LLMRequest], LLMResponse]

MOST_PIECES = 256
"""A streamed reply comes in at most this many pieces: a long one (the echo of a 1 MB message)
in longer pieces, as a real model server sends what it has ready, instead of one ``chunk``
event per eight characters -- 131,000 events, which took a server seconds to deliver."""


def _estimate_usage(request: LLMRequest, reply: str) -> Usage:
    words_in = sum(len((m.content or "").split()) for m in request.messages)
    return Usage(input_tokens=words_in, output_tokens=len(reply.split()))


def last_user_text(request: LLMRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content or ""
    return ""


def echo_responder(request: LLMRequest) -> LLMResponse:
    return LLMResponse.text(f"echo: {last_user_text(request)}")


def _parse_reply(entry: Any, position: int) -> LLMResponse:
    if isinstance(entry, str):
        return LLMResponse.text(entry)
    if isinstance(entry, dict) and entry.get("tool_calls"):
        calls = [
            ToolCall.of(
                call.get("id") or f"call_{position}_{n}",
                call["name"],
                json.dumps(call.get("arguments", {})),
            )
            for n, call in enumerate(entry["tool_calls"])
        ]
        return LLMResponse.calls(calls, content=entry.get("content") or "")
    if isinstance(entry, dict):
        return LLMResponse.text(entry.get("content") or "")
    raise InvalidInputError(f"script reply {position} must be a string or an object")


def _reply_problem(entry: Any) -> str | None:
    """What is wrong with one reply of a script file, or None: checked when the file is read
    (``agent create`` reads it), so a mistyped key or a call without a name is refused there,
    not met turns later as an empty answer or a failed one."""
    if isinstance(entry, str):
        return None
    if not isinstance(entry, dict):
        return "must be a string or an object"
    unknown = sorted(set(entry) - {"content", "tool_calls"})
    if unknown:
        return f"has unknown keys {', '.join(map(repr, unknown))} (a reply has content and tool_calls)"
    if not isinstance(entry.get("content", ""), str | None):
        return "content must be a string"
    calls = entry.get("tool_calls") or []
    if not isinstance(calls, list):
        return "tool_calls must be a list"
    for n, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            return f"tool call {n} must be an object with a name"
        if set(call) - {"id", "name", "arguments"}:
            return f"tool call {n} has unknown keys (a call has id, name and arguments)"
        if not isinstance(call.get("arguments", {}), dict):
            return f"tool call {n}: arguments must be an object"
        if not isinstance(call.get("id", ""), str | None):
            return f"tool call {n}: id must be a string"
    return None


def file_responder(path: Path) -> Responder:
    try:
        script = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"cannot read scripted model file {path}: {exc}") from exc
    if not isinstance(script, list) or not script:
        raise InvalidInputError(f"scripted model file {path} must hold a non-empty JSON list")
    for position, entry in enumerate(script):
        if (problem := _reply_problem(entry)) is not None:
            raise InvalidInputError(f"scripted model file {path}: reply {position} {problem}")

    def respond(request: LLMRequest) -> LLMResponse:
        turns = sum(1 for m in request.messages if m.role == "assistant")
        return _parse_reply(script[min(turns, len(script) - 1)], turns)

    return respond


def responder_for_model(model: str) -> Responder:
    if model in ("", "echo"):
        return echo_responder
    if model.startswith("file:"):
        return file_responder(Path(model.removeprefix("file:")).expanduser())
    raise InvalidInputError(f"scripted model {model!r}: use 'echo' or 'file:PATH'")


class ScriptedProvider:
    name = "scripted"

    def __init__(self, responder: Responder = echo_responder, *, chunk_size: int = 8) -> None:
        self._responder = responder
        self._chunk_size = chunk_size
        self.requests: list[LLMRequest] = []

    async def complete(
        self, request: LLMRequest, *, stream: bool = False, on_text: TextCallback | None = None
    ) -> LLMResponse:
        self.requests.append(request)
        response = self._responder(request)
        if response.usage == Usage():
            response = response.model_copy(update={"usage": _estimate_usage(request, response.content)})
        if stream and on_text is not None and response.content:
            text = response.content
            size = max(self._chunk_size, -(-len(text) // MOST_PIECES))
            for start in range(0, len(text), size):
                await maybe_await(on_text(text[start : start + size]))
        return response

    async def aclose(self) -> None:
        return None
