"""Tool calls that wait for something outside the agent loop (SPEC T4, A1)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentworld.models.message import utc_now

PendingKind = Literal["client", "approval"]
PendingStatus = Literal["pending", "answered", "expired", "interrupted", "cancelled"]
"""``cancelled``: the agent that made the call was deleted; the call can no longer be answered."""


class PendingCall(BaseModel):
    """One waiting call. ``batch_id`` is the assistant message that made it: the loop resumes
    once every waiting call of that message has its answer."""

    model_config = ConfigDict(populate_by_name=True)

    world: str
    tool_call_id: str = Field(alias="toolCallId")
    chat_id: str = Field(alias="chatId")
    agent: str
    kind: PendingKind
    tool_name: str = Field(alias="toolName")
    arguments: str
    """The call's arguments as the model wrote them (JSON text)."""
    batch_id: str = Field(alias="batchId")
    trigger_sender: str = Field(alias="triggerSender")
    """Who the agent was answering, so the resumed loop addresses its reply the same way."""
    reply_to: str | None = Field(default=None, alias="replyTo")
    detail: dict[str, Any] = Field(default_factory=dict)
    status: PendingStatus = "pending"
    created_at: datetime = Field(default_factory=utc_now, alias="createdAt")
    answered_at: datetime | None = Field(default=None, alias="answeredAt")
    answer: dict[str, Any] | None = None
