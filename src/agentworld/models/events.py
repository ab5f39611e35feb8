"""Typed world events (SPEC E1): one small class per kind, joined in a union.

Subscribers dispatch on the class (``match event: case MessageEvent(): ...``);
the ``kind`` field makes the union discriminated when events are read back from
storage or sent over the wire.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    field_serializer,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from agentworld.models.llm import Usage, usage_json
from agentworld.models.message import Message, ToolCall, new_id, utc_now


class _Event(BaseModel):
    # Every event goes over the wire with its fields in camelCase (``chat_id`` is ``chatId``):
    # the rule is stated here once, so no field spells its JSON name by hand.
    model_config = ConfigDict(populate_by_name=True, frozen=True, alias_generator=to_camel)

    event_id: str = Field(default_factory=lambda: new_id("evt_"))
    world: str
    created_at: datetime = Field(default_factory=utc_now)
    trace_id: str | None = None
    """The trace of the work that made the event (``agentworld.tracing``), when traces are
    sent; the key is left out otherwise."""

    @model_serializer(mode="wrap")
    def _trace_id_when_known(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and self.trace_id is None:
            data.pop("traceId", None)
            data.pop("trace_id", None)
        return data

    @property
    def chat(self) -> str | None:
        """The chat the event belongs to, if any (used for storage and filtering)."""
        return getattr(self, "chat_id", None)


class MessageEvent(_Event):
    """A message was published into a chat (by a person, an agent, the world or the system)."""

    kind: Literal["message"] = "message"
    message: Message
    """Stored already: whoever publishes a message stores it first (with the work it causes),
    so the event log never holds a second copy."""

    @property
    def chat(self) -> str | None:
        return self.message.chat_id


class SSEEvent(_Event):
    """Streaming progress of one LLM call; ``chunk`` events are never persisted (SPEC L3)."""

    kind: Literal["sse"] = "sse"
    phase: SSEPhase
    chat_id: str
    agent: str
    message_id: str
    content: str = ""
    usage: Usage | None = None
    cost_usd: float | None = None
    """On ``end``: what the call cost in USD (as recorded with its message); None when its
    price is unknown."""
    error: str | None = None

    @field_serializer("usage")
    def _usage_json(self, usage: Usage | None) -> dict[str, Any] | None:
        return None if usage is None else usage_json(usage.model_dump())


ToolPhase = Literal["start", "result", "error", "pending"]
SSEPhase = Literal["start", "chunk", "end", "error"]


class ToolEvent(_Event):
    """A tool call started, finished, failed, or now waits for the client (``pending``)."""

    kind: Literal["tool"] = "tool"
    phase: ToolPhase
    chat_id: str
    agent: str
    tool_call_id: str
    tool_name: str
    detail: dict[str, Any] = Field(default_factory=dict)


SystemReason = Literal[
    "notice",
    "agent_failed",
    "work_failed",
    "mcp_failed",
    "iteration_cap",
    "stopped",
    "hook_failed",
    "hook_rewrite",
    "subscriber_failed",
]
"""Why a system event was published: what a subscriber dispatches on (``context`` carries the
details of each case, for people and logs)."""


class SystemEvent(_Event):
    """Something the people watching the world must know: errors above all (SPEC O6)."""

    kind: Literal["system"] = "system"
    level: Literal["info", "warning", "error"] = "error"
    reason: SystemReason = "notice"
    text: str
    chat_id: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)


class CrudEvent(_Event):
    """A world, agent, chat or policy rule was created, updated or deleted. An "approve always"
    answer is a policy create (the UPDATE_POLICY of SPEC P6). A message delete is an edit or a
    delete onward (SPEC K2): ``data`` names every transcript message removed."""

    kind: Literal["crud"] = "crud"
    operation: Literal["create", "update", "delete"]
    entity: Literal["world", "agent", "chat", "policy", "message"]
    name: str
    chat_id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)


class ApprovalEvent(_Event):
    """A human approval was requested or answered."""

    kind: Literal["approval"] = "approval"
    phase: Literal["requested", "answered"]
    chat_id: str
    agent: str
    approval_id: str
    tool_name: str
    detail: dict[str, Any] = Field(default_factory=dict)


class QuestionEvent(_Event):
    """An agent asked a person a question (``ask_user``, SPEC F3), or it was answered (by a
    person, or by the timeout)."""

    kind: Literal["question"] = "question"
    phase: Literal["requested", "answered"]
    chat_id: str
    agent: str
    question_id: str
    question: str
    options: list[str] = Field(default_factory=list)
    detail: dict[str, Any] = Field(default_factory=dict)
    """``requested``: ``allowFreeText``; ``answered``: ``answer`` and ``actor`` (or
    ``reason: "timeout"``)."""


class ToolCallEvent(_Event):
    """The batch of tool calls an agent's model returned, before any of them runs.

    Seen only by ``on_event`` hooks (SPEC E3): a hook may change the calls, or respond in
    their place. It is not a bus event; the calls are also in the agent's stored message.
    """

    kind: Literal["tool_call"] = "tool_call"
    chat_id: str
    agent: str
    message_id: str
    """The assistant message that made the calls."""
    tool_calls: tuple[ToolCall, ...]


WorldEvent = Annotated[
    MessageEvent | SSEEvent | ToolEvent | SystemEvent | CrudEvent | ApprovalEvent | QuestionEvent,
    Field(discriminator="kind"),
]
EventKind = Literal["message", "sse", "tool", "system", "crud", "approval", "question"]
EVENT_ADAPTER: TypeAdapter[WorldEvent] = TypeAdapter(WorldEvent)
