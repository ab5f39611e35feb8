"""Results of client-side tool calls (SPEC T4), posted from any process.

The result is stored against the call, and the loop's ``resume`` queued, in the one
transaction that marks the call answered — so a result is taken once, even when two
processes post it, and the loop continues whichever process runs the chat.
"""

from __future__ import annotations

from typing import Any

from agentworld.errors import NotFoundError
from agentworld.models import Message
from agentworld.models.pending import PendingCall
from agentworld.models.work import Answer, InboxChange, StepResult
from agentworld.runtime.approvals import resume_for
from agentworld.runtime.turn_context import TurnContext
from agentworld.tools.executor import ToolResult


async def submit_client_result(
    ctx: TurnContext, world: str, tool_call_id: str, result: Any, *, is_error: bool = False
) -> tuple[PendingCall, StepResult]:
    """Store a client tool's result (text as given, anything else as JSON; an error as
    ``{"error": …}``); refused for an id that is not a pending client call of ``world``.
    Returns the call as answered and the step that answers it (refused when committed if the
    call was answered meanwhile): the result in the agent's memory and the transcript, the
    loop's resumption queued.

    The content is a ``ToolResult``'s, like a server tool's, so it is masked the same way:
    a client can echo what it was sent, or read a file that holds this process's keys."""
    pending = await ctx.storage.pending.get(world, tool_call_id)
    if pending is None or pending.kind != "client":
        raise NotFoundError(f"no pending tool call {tool_call_id!r} in world {world!r}")
    content = (
        ToolResult.error(tool_call_id, result) if is_error else ToolResult.ok(tool_call_id, result)
    ).content
    message = Message.tool_result(
        chat_id=pending.chat_id,
        agent=pending.agent,
        tool_call_id=tool_call_id,
        content=content,
        batch_id=pending.batch_id,
    )
    answer = {"result": content, "isError": is_error}
    step = StepResult(
        pending.chat_id,
        said=(message,),
        memory=((pending.agent, message),),
        answers=Answer("client", tool_call_id, answer),
        inbox=InboxChange(pending.chat_id, append=(resume_for(pending),)),
    )
    return pending.model_copy(update={"status": "answered", "answer": answer}), step
