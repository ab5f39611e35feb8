"""The unified provider response (SPEC L2): every provider returns this one shape."""

from __future__ import annotations

from typing import Any, Literal

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


def usage_json(usage: dict[str, Any]) -> dict[str, Any]:
    """An event's usage as JSON: its ``input_tokens``/``output_tokens`` kept, with the
    ``inputTokens``/``outputTokens`` the chat and agent documents use added beside them."""
    camel = {"inputTokens": usage.get("input_tokens"), "outputTokens": usage.get("output_tokens")}
    return {**usage, **{k: v for k, v in camel.items() if v is not None}}


class LLMResponse(BaseModel):
    """Text or tool calls, never both as a protocol in text: ``type`` says which."""

    type: Literal["text", "tool_calls"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    model: str | None = None

    @classmethod
    def of(
        cls,
        content: str,
        tool_calls: list[ToolCall],
        *,
        usage: Usage | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        """What a provider got back: tool calls when there are any (with any text next to
        them), else text. Every provider ends its response here, so all agree (SPEC L2)."""
        kind: Literal["text", "tool_calls"] = "tool_calls" if tool_calls else "text"
        return cls(
            type=kind, content=content, tool_calls=tool_calls, usage=usage or Usage(), model=model
        )

    @classmethod
    def text(cls, content: str, *, usage: Usage | None = None) -> LLMResponse:
        return cls(type="text", content=content, usage=usage or Usage())

    @classmethod
    def calls(
        cls, tool_calls: list[ToolCall], *, content: str = "", usage: Usage | None = None
    ) -> LLMResponse:
        return cls(type="tool_calls", content=content, tool_calls=tool_calls, usage=usage or Usage())
