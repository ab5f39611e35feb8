"""Streaming callbacks for embedders (SPEC E5), independent of the event bus.

``on_token`` gets each text fragment as it arrives, ``on_content`` the text so far,
``on_tool_call`` each tool call once the model's response is complete. Each gets the
agent and chat too. They are called in the order the model produced the output; a
callback that raises is logged and does not disturb the turn.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from agentworld.callbacks import maybe_await
from agentworld.models import ToolCall

logger = logging.getLogger("agentworld.runtime")
T = TypeVar("T")


@dataclass(frozen=True)
class StreamChunk:
    agent: str
    chat_id: str
    message_id: str
    text: str
    """The new fragment (``on_token``) or everything so far (``on_content``)."""


@dataclass(frozen=True)
class StreamedToolCall:
    agent: str
    chat_id: str
    message_id: str
    tool_call: ToolCall


@dataclass(frozen=True)
class StreamCallbacks:
    on_token: Callable[[StreamChunk], Awaitable[None] | None] | None = None
    on_content: Callable[[StreamChunk], Awaitable[None] | None] | None = None
    on_tool_call: Callable[[StreamedToolCall], Awaitable[None] | None] | None = None


async def call_safely(callback: Callable[[T], object] | None, value: T) -> None:
    if callback is None:
        return
    try:
        await maybe_await(callback(value))
    except Exception:
        logger.exception("streaming callback %r failed", callback)
