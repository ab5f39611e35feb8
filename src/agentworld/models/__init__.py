"""The domain model: worlds, agents, chats, messages, LLM responses, events and the records
the audit and tool logs read back."""

from __future__ import annotations

from agentworld.models.domain import (
    PROVIDER_NAMES,
    Agent,
    Chat,
    ProviderName,
    World,
)
from agentworld.models.llm import LLMResponse, Usage
from agentworld.models.message import FunctionCall, Message, Role, ToolCall, new_id, utc_now
from agentworld.models.records import AuditEntry, ChatActivity, ToolLogEntry

__all__ = [
    "PROVIDER_NAMES",
    "Agent",
    "AuditEntry",
    "Chat",
    "ChatActivity",
    "FunctionCall",
    "LLMResponse",
    "Message",
    "ProviderName",
    "Role",
    "ToolCall",
    "ToolLogEntry",
    "Usage",
    "World",
    "new_id",
    "utc_now",
]
