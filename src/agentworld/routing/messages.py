"""Which stored messages are offered to agents at all (before any mention is read)."""

from __future__ import annotations

from agentworld.models import Message
from agentworld.routing.mentions import extract_paragraph_mentions, is_human_sender


def is_routable(message: Message) -> bool:
    """Only spoken messages are offered to agents; tool traffic and system notes are not."""
    return (
        message.role in ("user", "assistant")
        and not message.tool_calls
        and bool(message.content)
        and message.sender.lower() != "system"
    )


def may_address_anyone(message: Message) -> bool:
    """A cheap pre-check of SPEC R2: an agent's message reaches nobody unless it mentions
    someone at the start of a line (world messages always do; system messages never)."""
    sender = message.sender.lower()
    if is_human_sender(sender) or sender == "world":
        return True
    return bool(extract_paragraph_mentions(message.content or ""))
