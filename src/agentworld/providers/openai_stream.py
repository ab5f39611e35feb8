"""Assemble an OpenAI chat-completions stream into one ``LLMResponse``.

A pure state machine with no I/O: feed it each chunk's delta as plain values,
read the response at the end. Tool calls arrive as fragments keyed by ``index``:
the first fragment of a call carries its id and name, later ones append to the
arguments text, and several calls may interleave (SPEC L4: all are kept).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentworld.models import LLMResponse, ToolCall, Usage


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAssembler:
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    model: str | None = None

    def add_text(self, fragment: str) -> None:
        self.text.append(fragment)

    def add_tool_fragment(
        self, index: int, *, id: str | None, name: str | None, arguments: str | None
    ) -> None:
        call = self.calls.setdefault(index, _PartialCall())
        if id:
            call.id = id
        if name and not call.name:  # only the first fragment of a call names it
            call.name = name
        if arguments:
            call.arguments.append(arguments)

    def set_usage(self, input_tokens: int, output_tokens: int) -> None:
        self.usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)

    def response(self) -> LLMResponse:
        calls = [
            ToolCall.of(call.id or f"call_{index}", call.name, "".join(call.arguments) or "{}")
            for index, call in sorted(self.calls.items())
        ]
        return LLMResponse.of("".join(self.text), calls, usage=self.usage, model=self.model)
