"""Build an agent's LLM input from stored state (SPEC R5).

Pure: it takes the agent and its stored memory for one chat and returns the
prompt. The caller loads both fresh from storage on every iteration, so a
system prompt edited mid-conversation is used at once and nothing stale leaks
in from another chat or another agent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from agentworld.models import Agent, Message
from agentworld.providers.base import PromptMessage
from agentworld.routing.mentions import is_human_sender
from agentworld.tools.registry import CLIENT_PREFIX as CLIENT_TOOL_PREFIX


def is_client_tool(name: str) -> bool:
    """``client.*`` tools run in the user's client; their traffic never reaches a model (A8)."""
    return name.startswith(CLIENT_TOOL_PREFIX)


def _client_call_ids(memory: Iterable[Message]) -> set[str]:
    return {
        call.id
        for message in memory
        for call in message.tool_calls or ()
        if is_client_tool(call.function.name)
    }


def _calls_awaiting_approval(memory: Iterable[Message]) -> set[str]:
    """Ids of the calls an injected approval request asks about (its ``toolCallId``)."""
    ids: set[str] = set()
    for message in memory:
        for call in message.tool_calls or ():
            if call.function.name != APPROVAL_TOOL:
                continue
            try:
                asked = json.loads(call.function.arguments or "{}").get("toolCallId")
            except (ValueError, AttributeError):
                continue
            if isinstance(asked, str):
                ids.add(asked)
    return ids


def _incoming_text(message: Message, agent_name: str) -> str:
    """Messages from other agents are labelled so the model knows who spoke."""
    content = message.content or ""
    sender = message.sender
    if is_human_sender(sender) or sender.lower() == agent_name.lower():
        return content
    return f"[{sender}]: {content}"


AWAITING_APPROVAL = (
    '{"status": "pending", "note": "this call waits for a person\'s approval; it has not run"}'
)
AWAITING_CLIENT = '{"status": "pending", "note": "this call waits for the user\'s application"}'
APPROVAL_TOOL = "client.requestApproval"
APPROVAL_ID_PREFIX = "approval_"
"""Approval ids (the ids of the injected ``client.requestApproval`` calls) start with this."""
REFUSED_NOTE = (
    "Your previous tool call was refused: that tool is reserved for the user's application "
    "and cannot be called by a model. Continue without it."
)
"""What the model is told in place of its own ``client.*`` calls, which it never sees (A8)."""


def memory_window(memory: Sequence[Message], size: int) -> Sequence[Message]:
    """The part of the memory an agent with window ``size`` is shown: all of it (0), else
    its latest ``size`` messages from the first ``user`` message among them, so no answer or
    tool result is shown without what it answered (providers refuse a tool result without
    its call, and some a conversation that does not start with the user). With no ``user``
    message among them — a long tool loop — from the first that is not a tool result.

    A memory of exactly ``size`` messages may itself be a window (a fresh process reads only
    the tail), so it is cut at its first user message too."""
    if not size or len(memory) < size:
        return memory
    tail = memory[-size:]
    start = next((i for i, m in enumerate(tail) if m.role == "user"), None)
    if start is None:
        start = next((i for i, m in enumerate(tail) if m.role != "tool"), len(tail))
    return tail[start:]


def build_prompt(agent: Agent, memory: Sequence[Message]) -> list[PromptMessage]:
    """System prompt, then the memory in order, with every tool result placed right after the
    assistant message that made the call, in call order (providers reject anything else).

    A call whose result is not there yet — it waits for a person's approval or for the
    user's application, while the agent answers something else — gets a placeholder that says
    which, so the prompt stays well-formed and truthful. (A call cut short by a process that
    stopped never gets here: the loop gives it its "interrupted" result first.)
    """
    prompt: list[PromptMessage] = []
    if agent.system_prompt:
        prompt.append(PromptMessage(role="system", content=agent.system_prompt))
    hidden = _client_call_ids(memory)
    awaiting_approval = _calls_awaiting_approval(memory)
    results = {
        m.tool_call_id: m.content or ""
        for m in memory
        if m.role == "tool" and m.tool_call_id is not None and m.tool_call_id not in hidden
    }
    for message in memory:
        match message.role:
            case "assistant":
                calls = tuple(c for c in message.tool_calls or () if c.id not in hidden)
                if any(
                    c.id in hidden and not c.id.startswith(APPROVAL_ID_PREFIX)
                    for c in message.tool_calls or ()
                ):
                    # The model itself called a reserved tool: it hears of the refusal, in words.
                    prompt.append(PromptMessage(role="system", content=REFUSED_NOTE))
                if not calls and message.tool_calls and not message.content:
                    continue  # only client traffic in it
                prompt.append(
                    PromptMessage(role="assistant", content=message.content, tool_calls=calls)
                )
                prompt.extend(
                    PromptMessage(
                        role="tool",
                        content=results.get(
                            c.id,
                            AWAITING_APPROVAL if c.id in awaiting_approval else AWAITING_CLIENT,
                        ),
                        tool_call_id=c.id,
                    )
                    for c in calls
                )
            case "tool":
                continue  # placed right after the call it answers
            case "user":
                prompt.append(
                    PromptMessage(role="user", content=_incoming_text(message, agent.name))
                )
            case "system":
                prompt.append(PromptMessage(role="system", content=message.content or ""))
    return prompt
