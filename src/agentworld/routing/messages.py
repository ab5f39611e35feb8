"""Which stored messages are offered to agents at all (before any mention is read)."""

from __future__ import annotations

from agentworld.models import Message
from agentworld.routing.mentions import (
    BUDGET_MARKER,
    TURN_LIMIT_MARKER,
    extract_paragraph_mentions,
    is_human_sender,
    should_agent_respond,
)


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


def why_nobody_answers(
    content: str, *, sender: str, agents: list[str], main_agent: str | None = None
) -> str | None:
    """Why a message will reach no agent, in words a person can act on — or None when some
    agent answers it. ``agents``: the names of the world's active agents.

    The reasons are checked in the order ``should_agent_respond`` applies its rules (SPEC R2,
    R4): a message no agent may answer whatever it says is explained as such, not as a
    missing mention it does not lack."""
    if any(
        should_agent_respond(name, sender=sender, content=content, main_agent=main_agent)
        for name in agents
    ):
        return None
    if sender.strip().casefold() == "system":
        return "nobody answers: system messages are never answered"
    if TURN_LIMIT_MARKER in content:
        return f"nobody answers: agents ignore messages that contain {TURN_LIMIT_MARKER!r}"
    if BUDGET_MARKER in content:
        return f"nobody answers: agents ignore messages that contain {BUDGET_MARKER!r}"
    listed = ", ".join(agents) if agents else "none yet"
    known = {name.lower() for name in agents}
    unknown = [name for name in extract_paragraph_mentions(content) if name not in known]
    if unknown:
        return f"no agent {unknown[0]!r} in this world (agents: {listed})"
    if not agents:
        return "nobody was addressed: the world has no agents"
    return f"nobody was addressed: mention an agent at the start of a line (agents: {listed})"
