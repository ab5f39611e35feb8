"""The seam between the agent loop and tool execution.

The loop only knows this interface: which tools to offer the model, and how
to turn one tool call into one result. Every failure becomes an error result
the model reads on its next iteration (SPEC O2); nothing raises past here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentworld.models import ToolCall
from agentworld.providers.base import ToolSpec


@dataclass(frozen=True, slots=True)
class ToolContext:
    world: str
    chat_id: str
    agent: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    tool_call_id: str
    content: str
    """The text the model sees: a JSON document."""
    is_error: bool = False

    @classmethod
    def error(cls, tool_call_id: str, message: str) -> ToolResult:
        return cls(tool_call_id, json.dumps({"error": message}), is_error=True)

    @classmethod
    def ok(cls, tool_call_id: str, value: Any) -> ToolResult:
        return cls(tool_call_id, value if isinstance(value, str) else json.dumps(value))


class ToolExecutor(Protocol):
    def specs(self) -> Sequence[ToolSpec]: ...

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolResult: ...


class NoTools:
    """The executor of a world without tools: every call is an unknown tool."""

    def specs(self) -> Sequence[ToolSpec]:
        return ()

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolResult:
        return ToolResult.error(call.id, f"unknown tool {call.function.name!r}")
