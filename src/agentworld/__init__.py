"""Agent World: worlds of LLM agents that talk by @mention, use tools and ask a human first.

The public API is re-exported here; everything else is implementation.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

# Public names and the modules that define them. They are imported on first use (PEP 562), so
# ``agentworld --help`` does not pay for SQLAlchemy and the provider SDKs (SPEC §6: CLI < 0.5 s).
_EXPORTS: dict[str, str] = {
    "AgentWorld": "agentworld.agent_world",
    "SendResult": "agentworld.agent_world",
    **dict.fromkeys(
        [
            "AgentWorldError",
            "AlreadyExistsError",
            "InvalidArgumentsError",
            "InvalidInputError",
            "NotFoundError",
            "PolicyDeniedError",
            "ProviderConfigError",
            "ProviderConnectionError",
            "ProviderError",
            "ProviderResponseError",
            "StorageError",
            "UserError",
        ],
        "agentworld.errors",
    ),
    "EventBus": "agentworld.events.bus",
    **dict.fromkeys(
        ["Agent", "Chat", "LLMResponse", "Message", "ToolCall", "Usage", "World"],
        "agentworld.models",
    ),
    **dict.fromkeys(
        [
            "ApprovalEvent",
            "CrudEvent",
            "MessageEvent",
            "SSEEvent",
            "SystemEvent",
            "ToolEvent",
            "WorldEvent",
        ],
        "agentworld.models.events",
    ),
    **dict.fromkeys(
        ["LLMProvider", "LLMRequest", "PromptMessage", "ToolSpec"], "agentworld.providers.base"
    ),
    "ScriptedProvider": "agentworld.providers.scripted",
    "WorldRuntime": "agentworld.runtime.world",
    "ProviderFactory": "agentworld.runtime.provider_pool",
    **dict.fromkeys(["Tool", "ToolContext", "ApprovalSettings"], "agentworld.tools.registry"),
    "Authorizer": "agentworld.runtime.authorizer",
    **dict.fromkeys(["Allow", "Deny", "AskUser", "Decision"], "agentworld.approval.decisions"),
    **dict.fromkeys(["OnEvent", "HookEvent"], "agentworld.runtime.hooks"),
    "Respond": "agentworld.runtime.hook_dispatch",
    "StreamCallbacks": "agentworld.runtime.streaming",
    "ToolCallEvent": "agentworld.models.events",
    **dict.fromkeys(
        ["PendingCall", "PendingApproval", "PendingClientCall", "ShellDisplay"],
        "agentworld.models.pending",
    ),
    **dict.fromkeys(["AuditEntry", "ChatActivity", "ToolLogEntry"], "agentworld.models.records"),
}

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld, SendResult
    from agentworld.approval.decisions import Allow, AskUser, Decision, Deny
    from agentworld.errors import (
        AgentWorldError,
        AlreadyExistsError,
        InvalidArgumentsError,
        InvalidInputError,
        NotFoundError,
        PolicyDeniedError,
        ProviderConfigError,
        ProviderConnectionError,
        ProviderError,
        ProviderResponseError,
        StorageError,
        UserError,
    )
    from agentworld.events.bus import EventBus
    from agentworld.models import Agent, Chat, LLMResponse, Message, ToolCall, Usage, World
    from agentworld.models.events import (
        ApprovalEvent,
        CrudEvent,
        MessageEvent,
        SSEEvent,
        SystemEvent,
        ToolCallEvent,
        ToolEvent,
        WorldEvent,
    )
    from agentworld.models.pending import (
        PendingApproval,
        PendingCall,
        PendingClientCall,
        ShellDisplay,
    )
    from agentworld.models.records import AuditEntry, ChatActivity, ToolLogEntry
    from agentworld.providers.base import LLMProvider, LLMRequest, PromptMessage, ToolSpec
    from agentworld.providers.scripted import ScriptedProvider
    from agentworld.runtime.authorizer import Authorizer
    from agentworld.runtime.hook_dispatch import Respond
    from agentworld.runtime.hooks import HookEvent, OnEvent
    from agentworld.runtime.provider_pool import ProviderFactory
    from agentworld.runtime.streaming import StreamCallbacks
    from agentworld.runtime.world import WorldRuntime
    from agentworld.tools.registry import ApprovalSettings, Tool, ToolContext


__all__ = [
    "Agent",
    "AgentWorld",
    "Allow",
    "ApprovalSettings",
    "AskUser",
    "AuditEntry",
    "Authorizer",
    "Decision",
    "Deny",
    "HookEvent",
    "OnEvent",
    "PendingApproval",
    "PendingCall",
    "PendingClientCall",
    "ProviderFactory",
    "Respond",
    "StreamCallbacks",
    "Tool",
    "ToolCallEvent",
    "ToolContext",
    "AgentWorldError",
    "AlreadyExistsError",
    "ApprovalEvent",
    "Chat",
    "ChatActivity",
    "CrudEvent",
    "EventBus",
    "InvalidArgumentsError",
    "InvalidInputError",
    "LLMProvider",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "MessageEvent",
    "NotFoundError",
    "PolicyDeniedError",
    "PromptMessage",
    "ProviderConfigError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderResponseError",
    "SSEEvent",
    "ScriptedProvider",
    "SendResult",
    "ShellDisplay",
    "StorageError",
    "SystemEvent",
    "ToolCall",
    "ToolEvent",
    "ToolLogEntry",
    "ToolSpec",
    "Usage",
    "UserError",
    "World",
    "WorldEvent",
    "WorldRuntime",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentworld' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


# A library logs, the application decides where logs go (the CLI: $AGENTWORLD_LOG).
logging.getLogger("agentworld").addHandler(logging.NullHandler())
