"""Build an agent's LLM input from stored state (SPEC R5).

Pure: it takes the agent and its stored memory for one chat and returns the
prompt. The caller loads both fresh from storage on every iteration, so a
system prompt edited mid-conversation is used at once and nothing stale leaks
in from another chat or another agent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agentworld.models import Agent, Message
from agentworld.providers.base import PromptMessage
from agentworld.routing.mentions import is_human_sender

CLIENT_TOOL_PREFIX = "client."


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


def _incoming_text(message: Message, agent_name: str) -> str:
    """Messages from other agents are labelled so the model knows who spoke."""
    content = message.content or ""
    sender = message.sender
    if is_human_sender(sender) or sender.lower() == agent_name.lower():
        return content
    return f"[{sender}]: {content}"


def build_prompt(agent: Agent, memory: Sequence[Message]) -> list[PromptMessage]:
    prompt: list[PromptMessage] = []
    if agent.system_prompt:
        prompt.append(PromptMessage(role="system", content=agent.system_prompt))
    hidden = _client_call_ids(memory)
    for message in memory:
        match message.role:
            case "assistant":
                calls = tuple(c for c in message.tool_calls or () if c.id not in hidden)
                if not calls and message.tool_calls and not message.content:
                    continue  # only client traffic in it
                prompt.append(
                    PromptMessage(role="assistant", content=message.content, tool_calls=calls)
                )
            case "tool":
                if message.tool_call_id in hidden:
                    continue
                prompt.append(
                    PromptMessage(
                        role="tool", content=message.content or "", tool_call_id=message.tool_call_id
                    )
                )
            case "user":
                prompt.append(PromptMessage(role="user", content=_incoming_text(message, agent.name)))
            case "system":
                prompt.append(PromptMessage(role="system", content=message.content or ""))
    return prompt
