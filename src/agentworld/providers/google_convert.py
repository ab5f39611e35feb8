"""Pure conversions between our provider types and Gemini's (``google-genai``) types.

No I/O here: request building is plain functions, and response assembly a thin
translation into the shared :mod:`agentworld.providers.assembly` state machine, so
every rule below is tested without a server.

Two Gemini habits shape this module:

* **Function calls often have no id.** The assembler gives each such call a
  synthesized id, deterministic in the conversation so far and the call's
  position (so a streamed and a plain answer get the same ids), and marked with
  :data:`SYNTHETIC_ID_PREFIX`. Like Google's ADK does with its ``adk-`` ids,
  marked ids are never sent back to Gemini; tool results are matched to their
  call by the function name, which we look up by ``tool_call_id``. Ids Gemini
  did send are kept exactly and sent back on both the call and its result.
* **Gemini 3 wants the ``thoughtSignature`` of a turn's first function call
  back.** We keep no signatures (a ``ToolCall`` has no field for them), so the
  first call of each replayed model turn carries Google's documented
  "skip validation" sentinel instead.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from google.genai import types

from agentworld import strict_json
from agentworld.models import LLMResponse, ToolCall
from agentworld.providers.assembly import TEXT_KEY, PartsAssembler, arguments_text
from agentworld.providers.base import LLMRequest, PromptMessage, ToolSpec

SYNTHETIC_ID_PREFIX = "call_gemini_"
"""Marks ids we made up for id-less Gemini function calls; they never go back to Gemini."""

# Google's documented value for function calls whose real signature is unknown; the
# SDK holds signatures as bytes and base64url-encodes them, so this decodes to the
# bytes that encode back to exactly that text on the wire.
SKIP_SIGNATURE = base64.urlsafe_b64decode("skip_thought_signature_validator")
_UNSIGNED_MODELS = re.compile(r"^(?:models/)?(?:gemini-[12](?:[.-]|$)|gemma)")


def is_synthetic_id(call_id: str | None) -> bool:
    return call_id is not None and call_id.startswith(SYNTHETIC_ID_PREFIX)


def wants_thought_signatures(model: str) -> bool:
    """Gemini 3 and later reject replayed function calls without a signature; 1.x/2.x and Gemma
    never asked for one, so they get none."""
    return _UNSIGNED_MODELS.match(model) is None


# --- request -----------------------------------------------------------------------------------


def _arguments(text: str) -> dict[str, Any]:
    """Gemini wants the arguments as an object; text that is not one (or holds a ``NaN``, which
    no JSON encoder sends) is passed along verbatim."""
    try:
        value = strict_json.loads(text or "{}")
    except (ValueError, RecursionError):
        return {"arguments": text}
    return value if isinstance(value, dict) else {"arguments": value}


def _result(content: str | None) -> dict[str, Any]:
    """A tool result as Gemini's ``response`` object.

    A JSON object goes as is, so an ``{"error": ...}`` result reads as an error, which is
    how Gemini interprets that key; anything else (a ``NaN`` in it too, which no JSON encoder
    sends) is wrapped as ``{"result": ...}``.
    """
    try:
        value = strict_json.loads(content or "")
    except (ValueError, RecursionError):
        return {"result": content or ""}
    return value if isinstance(value, dict) else {"result": value}


def _call_part(call: ToolCall, *, signed: bool) -> types.Part:
    function_call = types.FunctionCall(
        name=call.function.name,
        args=_arguments(call.function.arguments),
        id=None if is_synthetic_id(call.id) else call.id,
    )
    return types.Part(
        function_call=function_call, thought_signature=SKIP_SIGNATURE if signed else None
    )


def to_contents(
    messages: Sequence[PromptMessage], *, model: str = ""
) -> tuple[str | None, list[types.Content]]:
    """Split our messages into Gemini's system instruction and ``contents``.

    System messages join the system instruction; assistant messages become ``model``
    turns; consecutive tool results become one ``user`` turn of function responses.
    """
    system: list[str] = []
    contents: list[types.Content] = []
    names: dict[str, str] = {}  # tool_call_id -> function name, from earlier assistant turns
    signed = wants_thought_signatures(model)
    results: list[types.Part] = []

    def flush_results() -> None:
        if results:
            contents.append(types.Content(role="user", parts=list(results)))
            results.clear()

    for message in messages:
        if message.role == "tool":
            results.append(_result_part(message, names))
            continue
        flush_results()
        if message.role == "system":
            if message.content:
                system.append(message.content)
        elif message.role == "user":
            if message.content:
                contents.append(
                    types.Content(role="user", parts=[types.Part(text=message.content)])
                )
        else:
            parts = [types.Part(text=message.content)] if message.content else []
            for i, call in enumerate(message.tool_calls):
                names[call.id] = call.function.name
                parts.append(_call_part(call, signed=signed and i == 0))
            if parts:  # Gemini refuses a turn without parts
                contents.append(types.Content(role="model", parts=parts))
    flush_results()
    return ("\n\n".join(system) or None), contents


def _result_part(message: PromptMessage, names: dict[str, str]) -> types.Part:
    call_id = message.tool_call_id or ""
    name = names.get(call_id)
    if name is None:
        # A result whose call is not in the input (trimmed history): a function response
        # must name its function, which we cannot know, so the model reads it as text.
        return types.Part(text=f"[result of tool call {call_id}]\n{message.content or ''}")
    return types.Part(
        function_response=types.FunctionResponse(
            name=name,
            response=_result(message.content),
            id=None if is_synthetic_id(call_id) or not call_id else call_id,
        )
    )


def to_tool(tools: Sequence[ToolSpec]) -> types.Tool:
    """Every tool as a function declaration whose JSON schema goes as is."""
    return types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name=tool.name, description=tool.description, parameters_json_schema=tool.parameters
            )
            for tool in tools
        ]
    )


def to_config(request: LLMRequest, system: str | None) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        system_instruction=system,
        tools=[to_tool(request.tools)] if request.tools else None,
        temperature=request.temperature,
        max_output_tokens=request.max_tokens,
        # We run tools ourselves (policy, approval); the SDK must never call them.
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def fingerprint(request: LLMRequest) -> str:
    """A digest of the conversation so far: the seed of synthesized call ids."""
    transcript = [
        [m.role, m.content, [c.model_dump() for c in m.tool_calls], m.tool_call_id]
        for m in request.messages
    ]
    return hashlib.sha1(json.dumps([request.model, transcript]).encode()).hexdigest()


# --- response ----------------------------------------------------------------------------------


def synthetic_id(seed: str, index: int, name: str, arguments: str) -> str:
    digest = hashlib.sha1(json.dumps([seed, index, name, arguments]).encode()).hexdigest()
    return SYNTHETIC_ID_PREFIX + digest[:16]


@dataclass
class ResponseAssembler:
    """Feed it every ``GenerateContentResponse`` (one, or each chunk of a stream) in order.

    A thin translation into the shared :class:`~agentworld.providers.assembly.PartsAssembler`:
    text is one running part; each function call arrives whole and is keyed by its
    position among the calls, which also seeds the id of a call Gemini sent without
    one. ``add`` returns the new text so a stream can be echoed; ``response`` gives
    the one unified answer, identical for both modes.
    """

    seed: str
    blocked: str | None = None
    """Why Gemini refused the prompt itself (``promptFeedback.blockReason``), if it did."""
    finished: bool = False
    """True once a candidate carried its ``finishReason`` (only the last chunk of a stream
    does): a stream that ends without one was cut short."""
    _parts: PartsAssembler = field(init=False, repr=False)
    _calls: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        self._parts = PartsAssembler(fallback_id=partial(synthetic_id, self.seed))

    def add(self, chunk: types.GenerateContentResponse) -> list[str]:
        self._parts.model = chunk.model_version or self._parts.model
        self._add_usage(chunk.usage_metadata)
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            self.blocked = str(getattr(feedback.block_reason, "value", feedback.block_reason))
        candidate = chunk.candidates[0] if chunk.candidates else None
        if candidate is not None and candidate.finish_reason is not None:
            self.finished = True
        parts = candidate.content.parts if candidate and candidate.content else None
        fresh: list[str] = []
        for part in parts or []:
            if part.function_call is not None:
                self._add_call(part.function_call)
            elif part.text and not part.thought:  # thought summaries are not the answer
                fresh.append(self._parts.add_text(TEXT_KEY, part.text))
        return fresh

    def _add_call(self, call: types.FunctionCall) -> None:
        arguments = arguments_text(call.args or {})
        self._parts.add_tool_call(self._calls, id=call.id, name=call.name, arguments=arguments)
        self._calls += 1

    def _add_usage(self, usage: types.GenerateContentResponseUsageMetadata | None) -> None:
        # Every chunk repeats the prompt count; the output count is final in the last one.
        if usage is None:
            return
        output = usage.candidates_token_count
        if output is not None and usage.thoughts_token_count:
            output += usage.thoughts_token_count  # thinking is billed as output
        self._parts.set_usage(input_tokens=usage.prompt_token_count, output_tokens=output)

    def response(self) -> LLMResponse:
        return self._parts.response()
