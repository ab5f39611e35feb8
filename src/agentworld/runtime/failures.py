"""What the world says when something fails: system events (and a visible chat line) as
values, so the runtime only publishes them (SPEC O6: no handler error is silent).

An error's text is masked here before it is logged, stored or published
(``redact_process_text``): a provider, an MCP server or a library may quote a key it was
given, and these lines reach the transcript, the event log, stderr and later the model."""

from __future__ import annotations

import logging

from agentworld.errors import AgentWorldError
from agentworld.models import Message
from agentworld.models.events import SystemEvent
from agentworld.models.work import Route, WorkItem
from agentworld.process_secrets import redact_process_text

logger = logging.getLogger("agentworld.runtime")


def agent_failed(world: str, chat_id: str, agent: str, exc: Exception) -> tuple[SystemEvent, Message]:
    """A failed turn: a system event and a system line in the chat; other agents go on."""
    expected = isinstance(exc, AgentWorldError)  # a provider or config failure, not a bug
    reason = redact_process_text(str(exc))
    logger.warning(
        "agent %s failed in chat %s: %s", agent, chat_id, reason, exc_info=None if expected else exc
    )
    text = f"Error from {agent}: {reason}"
    event = SystemEvent(
        world=world,
        level="error",
        text=text,
        chat_id=chat_id,
        reason="agent_failed",
        context={"agent": agent, "error_type": type(exc).__name__},
    )
    return event, Message(chat_id=chat_id, role="system", sender="system", content=text)


def work_failed(world: str, chat_id: str, item: WorkItem, exc: Exception) -> SystemEvent:
    """A queue item that could not be handled (routing, resuming, running an approved call)."""
    what = f"message {item.message.message_id}" if isinstance(item, Route) else f"{item.kind} item"
    logger.error("%s failed in chat %s", what, chat_id, exc_info=exc)
    return SystemEvent(
        world=world,
        level="error",
        text=f"{what} failed: {redact_process_text(str(exc))}",
        chat_id=chat_id,
        reason="work_failed",
        context={"error_type": type(exc).__name__},
    )


def mcp_server_failed(world: str, server: str, exc: Exception) -> SystemEvent:
    """An MCP server that fails is reported; the world keeps working without it (SPEC T3)."""
    reason = redact_process_text(str(exc))
    logger.warning("MCP server %s: %s", server, reason)
    return SystemEvent(
        world=world,
        level="error",
        text=f"MCP server {server!r} is unavailable: {reason}",
        reason="mcp_failed",
        context={"mcp_server": server, "error_type": type(exc).__name__},
    )
