"""Messages in the OpenAI chat shape (SPEC W2, W3).

A message is what people and agents publish into a chat, and also what an agent
keeps in its memory. The role set is OpenAI's; there are no custom roles and no
protocol hidden in ``content``: tool calls are structured data in ``tool_calls``
and tool results point back with ``tool_call_id``.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from random import Random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["user", "assistant", "tool", "system"]


_ids = Random()
"""A generator of its own: a library that seeds ``random`` (tests do) cannot make ids repeat."""
os.register_at_fork(after_in_child=_ids.seed)  # a forked child does not repeat its parent's


def new_id(prefix: str = "") -> str:
    """A short, sortable-enough unique id: millisecond time plus 64 random bits.

    The bits come from ``random`` (seeded from the OS, again in a forked child): an id
    names a message, an event or a grant, it grants nothing, so it needs to be unique, not
    unguessable -- and a turn makes several, where ``secrets`` costs a system call each.
    Whatever must not be guessed (the server's token) comes from ``secrets``."""
    return f"{prefix}{int(time.time() * 1000):x}{_ids.getrandbits(64):016x}"


def utc_now() -> datetime:
    return datetime.now(UTC)


class FunctionCall(BaseModel):
    name: str
    arguments: str = "{}"
    """The arguments as the model produced them: a JSON text, possibly invalid."""


class ToolCall(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall

    @classmethod
    def of(cls, id: str, name: str, arguments: str = "{}") -> ToolCall:
        return cls(id=id, function=FunctionCall(name=name, arguments=arguments))


class Message(BaseModel):
    """One chat message, with the bookkeeping fields every stored message carries.

    Serialised with ``by_alias=True`` it has exactly the JSON shape of SPEC §3.
    """

    model_config = ConfigDict(populate_by_name=True)

    message_id: str = Field(default_factory=lambda: new_id("msg_"), alias="messageId")
    chat_id: str = Field(alias="chatId")
    role: Role
    sender: str
    agent_id: str | None = Field(default=None, alias="agentId")
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    reply_to_message_id: str | None = Field(default=None, alias="replyToMessageId")
    created_at: datetime = Field(default_factory=utc_now, alias="createdAt")
    input_tokens: int | None = Field(default=None, alias="inputTokens", exclude=True)
    output_tokens: int | None = Field(default=None, alias="outputTokens", exclude=True)
    model: str | None = Field(default=None, exclude=True)
    """The model an agent's call was made to (stored with its usage, not read back)."""
    cost_usd: float | None = Field(default=None, alias="costUsd", exclude=True)
    """What the call cost in USD at the prices of the day, None when unknown (stored, not
    read back: later price changes never rewrite it)."""

    @classmethod
    def tool_result(
        cls, *, chat_id: str, agent: str, tool_call_id: str, content: str, batch_id: str | None
    ) -> Message:
        """The ``tool`` message answering call ``tool_call_id`` in ``agent``'s memory."""
        return cls(
            chat_id=chat_id,
            role="tool",
            sender=agent,
            agent_id=agent,
            content=content,
            tool_call_id=tool_call_id,
            reply_to_message_id=batch_id,
        )

    def to_json(self) -> dict[str, Any]:
        """The SPEC §3 message document (absent values are null)."""
        return self.model_dump(mode="json", by_alias=True)
