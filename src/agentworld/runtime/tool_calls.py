"""One batch of tool calls from one model response: check, authorize, run, store (SPEC O2, T4).

Every call of the batch gets its own outcome, in order, each stored against its
own ``tool_call_id`` as soon as it exists (SPEC O3). A call to a client-side
tool produces no result here: it is recorded as pending and the batch reports
that the loop must wait; the loop resumes when the client posts the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from agentworld.approval.decisions import Allow, AskUser, Deny
from agentworld.models import Message, ToolCall
from agentworld.models.pending import PendingClientCall
from agentworld.models.records import INTERRUPTED
from agentworld.redaction import redact
from agentworld.runtime.approvals import request_approval
from agentworld.runtime.authorizer import named_tool, schema_problem
from agentworld.runtime.tool_run import Ran, result_event, run_logged, tool_event
from agentworld.runtime.turn_context import Step, TurnContext
from agentworld.tools.executor import ToolResult, run_tool
from agentworld.tools.registry import Tool, ToolContext, ToolRegistry
from agentworld.tools.validation import ArgumentError, parse_arguments


@dataclass(frozen=True)
class Batch:
    """The assistant message whose calls these are, and whom the agent was answering."""

    message_id: str
    trigger_sender: str
    reply_to: str | None


BatchOutcome = Literal["continue", "wait"]
"""``continue``: ask the model again; ``wait``: a call waits outside the loop (a client tool or
a person's approval). A call the model may not make (``client.*``, unknown, malformed) gets an
error result like any failed call, and the loop goes on: the iteration cap bounds a model that
insists (SPEC O2, A8)."""

async def run_tool_calls(
    ctx: TurnContext,
    registry: ToolRegistry,
    calls: Sequence[ToolCall],
    context: ToolContext,
    batch: Batch,
    *,
    resumed: bool = False,
) -> BatchOutcome:
    """Handle every call of the batch in order, each with its own outcome.

    ``resumed``: the batch was cut short by a process that stopped; a call that had started
    gets an "interrupted" error result instead of running again."""
    waiting = False
    for call in calls:
        if resumed and await ctx.storage.tool_logs.interrupt(context.world, call.id, reason=INTERRUPTED):
            outcome: ToolResult | Ran | None = ToolResult.interrupted(call.id)
        else:
            outcome = await _handle(ctx, registry, call, context, batch)
        # The world's settings and grants the batch read (``ToolContext.policy``) are fresh
        # for its first call only: a later one may come after a tool ran for minutes, and a
        # person may have revoked a grant meanwhile, so it is authorized from a fresh read.
        context = replace(context, policy=None)
        if outcome is None:
            waiting = True
            continue
        await _store_result(ctx, call, outcome, context, batch)
    return "wait" if waiting else "continue"


async def _handle(
    ctx: TurnContext, registry: ToolRegistry, call: ToolCall, context: ToolContext, batch: Batch
) -> ToolResult | Ran | None:
    """The call's result (``Ran`` when the tool ran: with how the run ended), or None when it
    waits (a person's approval, a client)."""
    name = call.function.name
    tool = named_tool(registry, name)  # the same checks `policy test WORLD` makes
    if not isinstance(tool, Tool):
        return ToolResult.error(call.id, tool)
    try:
        arguments = parse_arguments(call.function.arguments)
    except ArgumentError as exc:
        return ToolResult.error(call.id, f"{name}: {exc}")
    if (problem := schema_problem(tool, arguments)) is not None:
        return ToolResult.error(call.id, problem)
    if tool.precheck is not None and (problem := tool.precheck(arguments, context)):
        return ToolResult.error(call.id, f"{name}: {problem}")

    decision = await ctx.authorizer.authorize(tool, arguments, context)
    match decision:
        case Deny(reason=reason, by=by):
            return ToolResult.denial(call.id, reason, by=by)
        case AskUser():
            await request_approval(
                ctx,
                tool,
                call,
                arguments,
                context,
                batch_id=batch.message_id,
                trigger_sender=batch.trigger_sender,
                reply_to=batch.reply_to,
            )
            return None
        case Allow():
            pass

    if tool.location == "client":
        await ctx.storage.pending.add(
            [
                PendingClientCall(
                    world=context.world,
                    tool_call_id=call.id,
                    chat_id=context.chat_id,
                    agent=context.agent,
                    tool_name=name,
                    arguments=call.function.arguments or "{}",
                    batch_id=batch.message_id,
                    trigger_sender=batch.trigger_sender,
                    reply_to=batch.reply_to,
                )
            ]
        )
        await ctx.bus.publish(tool_event(context, call.id, name, "pending", {"arguments": redact(arguments)}))
        return None

    return await run_logged(
        ctx, context, call.id, name, redact(arguments), lambda: run_tool(tool, call.id, arguments, context)
    )


async def _store_result(
    ctx: TurnContext, call: ToolCall, outcome: ToolResult | Ran, context: ToolContext, batch: Batch
) -> None:
    """The call's result in the agent's memory and the transcript, with its ``tool`` event and
    (when the tool ran) how the run ended, in one step."""
    result, end = (outcome.result, outcome.end) if isinstance(outcome, Ran) else (outcome, None)
    message = Message.tool_result(
        chat_id=context.chat_id,
        agent=context.agent,
        tool_call_id=call.id,
        content=result.content,
        batch_id=batch.message_id,
    )
    await ctx.publish(
        Step(
            message,
            memory_of=context.agent,
            events=(result_event(context, call.id, call.function.name, result, end),),
            tool_log_end=end,
        )
    )
