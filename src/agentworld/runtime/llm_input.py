"""Build an agent's LLM input from stored state (SPEC R5).

Pure: it takes the agent and its stored memory for one chat and returns the
prompt. The caller loads both fresh from storage on every iteration, so a
system prompt edited mid-conversation is used at once and nothing stale leaks
in from another chat or another agent.

The approval traffic the runtime injects (its ``client.requestApproval`` calls and the
person's answers) never reaches a model (SPEC R5, A8). A ``client.*`` call the model made
itself is not that: the runtime refused it at once with an error result, and the call and its
result stay in the model's input like any failed call, so the model reads why and does not
repeat it.

A call a person corrected while approving it (SPEC F2) is shown as it ran: its person's answer
carries the corrected arguments (secrets masked), and the model's input shows the call with
them -- the stored message is left as the model wrote it (memory is append-only) -- while the
result starts with a note that a person changed it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from agentworld.models import Agent, Message, ToolCall
from agentworld.providers.base import PromptMessage
from agentworld.routing.mentions import is_human_sender
from agentworld.tools.registry import CLIENT_PREFIX as CLIENT_TOOL_PREFIX


def is_client_tool(name: str) -> bool:
    """``client.*`` names are the system's own (its approval requests): a model's call of one
    is refused with an error result (A8)."""
    return name.startswith(CLIENT_TOOL_PREFIX)


def _is_decision(content: str | None) -> bool:
    """Whether a tool result is a person's answer to an approval request (``approvals``)."""
    try:
        answer = json.loads(content or "")
    except (ValueError, RecursionError):
        return False
    return isinstance(answer, dict) and answer.get("decision") in ("approve", "deny")


def _injected_requests(memory: Sequence[Message]) -> set[str]:
    """Ids of the approval requests the runtime injected (SPEC A1): a ``client.requestApproval``
    call with an approval id, alone in an assistant message without text, which answers the
    agent's batch of calls (its ``reply_to`` is that assistant message) or is answered by a
    person's decision or not answered yet (its batch may be outside a memory window).

    A model may write the same call, id and all, but not those: its message answers what the
    agent was asked, and its call gets an error result at once (SPEC A8)."""
    batches = {m.message_id for m in memory if m.role == "assistant" and m.tool_calls}
    results = {m.tool_call_id: m.content for m in memory if m.role == "tool" and m.tool_call_id}
    ids: set[str] = set()
    for message in memory:
        calls = message.tool_calls or ()
        if message.role != "assistant" or message.content or len(calls) != 1:
            continue
        call = calls[0]
        if call.function.name != APPROVAL_TOOL or not call.id.startswith(APPROVAL_ID_PREFIX):
            continue
        if (
            message.reply_to_message_id in batches
            or call.id not in results
            or _is_decision(results[call.id])
        ):
            ids.add(call.id)
    return ids


def _calls_awaiting_approval(memory: Iterable[Message], injected: set[str]) -> set[str]:
    """Ids of the calls an injected approval request asks about (its ``toolCallId``)."""
    ids: set[str] = set()
    for message in memory:
        for call in message.tool_calls or ():
            if call.id not in injected:
                continue
            try:
                asked = json.loads(call.function.arguments or "{}").get("toolCallId")
            except (ValueError, AttributeError):
                continue
            if isinstance(asked, str):
                ids.add(asked)
    return ids


def _edited_calls(memory: Iterable[Message], injected: set[str]) -> dict[str, str]:
    """The arguments (JSON text) of each call a person approved as corrected, by call id: the
    ``arguments`` of the answer to an injected request, for the call it asked about."""
    answers = {m.tool_call_id: m.content for m in memory if m.role == "tool" and m.tool_call_id in injected}
    edited: dict[str, str] = {}
    for message in memory:
        for call in message.tool_calls or ():
            if call.id not in injected or call.id not in answers:
                continue
            try:
                asked = json.loads(call.function.arguments or "{}").get("toolCallId")
                answer = json.loads(answers[call.id] or "")
            except (ValueError, AttributeError, RecursionError):
                continue
            if not isinstance(answer, dict) or answer.get("decision") != "approve":
                continue
            if isinstance(asked, str) and isinstance(arguments := answer.get("arguments"), dict):
                edited[asked] = json.dumps(arguments, ensure_ascii=False)
    return edited


def _as_run(call: ToolCall, edited: dict[str, str]) -> ToolCall:
    """``call`` with the arguments a person gave it, if they corrected it."""
    if call.id not in edited:
        return call
    return call.model_copy(update={"function": call.function.model_copy(update={"arguments": edited[call.id]})})


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
AWAITING_ANSWER = '{"status": "pending", "note": "this question waits for the user\'s answer"}'
ASK_USER = "ask_user"
"""The built-in tool whose call is a question to a person (``tools.builtin.definitions``)."""
APPROVAL_TOOL = "client.requestApproval"
APPROVAL_ID_PREFIX = "approval_"
"""Approval ids (the ids of the injected ``client.requestApproval`` calls) start with this."""


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

    A call whose result is not there yet — it waits for a person's approval or answer, or for
    the user's application, while the agent answers something else — gets a placeholder that says
    which, so the prompt stays well-formed and truthful. (A call cut short by a process that
    stopped never gets here: the loop gives it its "interrupted" result first.)
    """
    prompt: list[PromptMessage] = []
    if agent.system_prompt:
        prompt.append(PromptMessage(role="system", content=agent.system_prompt))
    hidden = _injected_requests(memory)
    awaiting_approval = _calls_awaiting_approval(memory, hidden)
    edited = _edited_calls(memory, hidden)
    results = {
        m.tool_call_id: m.content or ""
        for m in memory
        if m.role == "tool" and m.tool_call_id is not None and m.tool_call_id not in hidden
    }
    for message in memory:
        match message.role:
            case "assistant":
                calls = tuple(_as_run(c, edited) for c in message.tool_calls or () if c.id not in hidden)
                if not calls and message.tool_calls and not message.content:
                    continue  # an injected approval request
                prompt.append(
                    PromptMessage(role="assistant", content=message.content, tool_calls=calls)
                )
                prompt.extend(
                    PromptMessage(
                        role="tool",
                        content=results.get(c.id, _awaiting(c, awaiting_approval)),
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


def _awaiting(call: ToolCall, awaiting_approval: set[str]) -> str:
    """The placeholder result of a call still waiting: for what, and whom."""
    if call.id in awaiting_approval:
        return AWAITING_APPROVAL
    return AWAITING_ANSWER if call.function.name == ASK_USER else AWAITING_CLIENT
