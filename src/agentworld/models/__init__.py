"""The domain model: worlds, agents, chats, messages, LLM responses and events."""

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

__all__ = [
    "PROVIDER_NAMES",
    "Agent",
    "Chat",
    "FunctionCall",
    "LLMResponse",
    "Message",
    "ProviderName",
    "Role",
    "ToolCall",
    "Usage",
    "World",
    "new_id",
    "utc_now",
]
