"""The one provider interface (SPEC L1, L2).

Providers are pure clients: they turn an ``LLMRequest`` into an ``LLMResponse``
and report streamed text through a callback. They never touch storage, never
publish events and never run tools; the runtime does all three around them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentworld.models import LLMResponse, Role, ToolCall
from agentworld.models.settings import DEFAULT_MODEL_DEADLINE_SECONDS

TextCallback = Callable[[str], "Awaitable[None] | None"]


@dataclass(frozen=True, slots=True)
class PromptMessage:
    """One message of LLM input: the OpenAI chat shape without our bookkeeping."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as offered to a model: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True)
class LLMRequest:
    model: str
    messages: Sequence[PromptMessage]
    tools: Sequence[ToolSpec] = ()
    temperature: float | None = None
    max_tokens: int | None = None
    deadline: float = DEFAULT_MODEL_DEADLINE_SECONDS
    """Seconds the whole call may take, retries and their waits included (``RetryingProvider``)."""


class LLMProvider(Protocol):
    """What the runtime needs from any provider."""

    name: str

    async def complete(
        self, request: LLMRequest, *, stream: bool = False, on_text: TextCallback | None = None
    ) -> LLMResponse:
        """One model call. With ``stream`` the text arrives through ``on_text`` as it comes;
        either way the return value is the same complete response (SPEC L2)."""
        ...

    async def aclose(self) -> None: ...
