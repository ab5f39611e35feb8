"""The unified provider response (SPEC L2): every provider returns this one shape."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agentworld.models.message import ToolCall


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class LLMResponse(BaseModel):
    """Text or tool calls, never both as a protocol in text: ``type`` says which."""

    type: Literal["text", "tool_calls"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    model: str | None = None

    @classmethod
    def text(cls, content: str, *, usage: Usage | None = None) -> LLMResponse:
        return cls(type="text", content=content, usage=usage or Usage())

    @classmethod
    def calls(
        cls, tool_calls: list[ToolCall], *, content: str = "", usage: Usage | None = None
    ) -> LLMResponse:
        return cls(type="tool_calls", content=content, tool_calls=tool_calls, usage=usage or Usage())
