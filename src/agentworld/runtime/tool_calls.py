"""One batch of tool calls from one model response: check, authorize, run, store (SPEC O2, T4).

Every call of the batch gets its own outcome, in order, each stored against its
own ``tool_call_id`` as soon as it exists (SPEC O3). A call to a client-side
tool produces no result here: it is recorded as pending and the batch reports
that the loop must wait; the loop resumes when the client posts the result.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentworld.approval.decisions import Allow, AskUser, Deny
from agentworld.models import Message, ToolCall
from agentworld.models.events import ToolEvent, ToolPhase
from agentworld.models.pending import PendingClientCall
from agentworld.redaction import redact
from agentworld.runtime.approvals import request_approval
from agentworld.runtime.authorizer import named_tool, schema_problem
from agentworld.runtime.turn_context import TurnContext
from agentworld.tools.executor import INTERRUPTED, ToolResult, run_tool
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
            result: ToolResult | None = ToolResult.interrupted(call.id)
        else:
            result = await _handle(ctx, registry, call, context, batch)
        if result is None:
            waiting = True
            continue
        await _store_result(ctx, call, result, context, batch)
    return "wait" if waiting else "continue"


async def _handle(
    ctx: TurnContext, registry: ToolRegistry, call: ToolCall, context: ToolContext, batch: Batch
) -> ToolResult | None:
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
        await _tool_event(ctx, context, call, "pending", {"arguments": redact(arguments)})
        return None

    await _tool_event(ctx, context, call, "start", {"arguments": redact(arguments)})
    log_id = await ctx.storage.tool_logs.start(
        world=context.world,
        chat_id=context.chat_id,
        agent=context.agent,
        tool_call_id=call.id,
        tool_name=name,
        arguments=redact(arguments),
    )
    started = time.perf_counter()
    result = await run_tool(tool, call.id, arguments, context)
    await ctx.storage.tool_logs.finish(
        log_id,
        status="error" if result.is_error else "ok",
        output=redact(result.content),
        duration_ms=(time.perf_counter() - started) * 1000,
    )
    return result


async def _store_result(
    ctx: TurnContext, call: ToolCall, result: ToolResult, context: ToolContext, batch: Batch
) -> None:
    detail: dict[str, object] = {"content": redact(result.content[:2000])}
    if result.denied_by is not None:
        detail["deniedBy"] = result.denied_by
    await _tool_event(ctx, context, call, "error" if result.is_error else "result", detail)
    message = Message.tool_result(
        chat_id=context.chat_id,
        agent=context.agent,
        tool_call_id=call.id,
        content=result.content,
        batch_id=batch.message_id,
    )
    await ctx.publish(message, memory_of=context.agent)


async def _tool_event(
    ctx: TurnContext,
    context: ToolContext,
    call: ToolCall,
    phase: ToolPhase,
    detail: dict[str, object],
) -> None:
    await ctx.bus.publish(
        ToolEvent(
            world=context.world,
            phase=phase,
            chat_id=context.chat_id,
            agent=context.agent,
            tool_call_id=call.id,
            tool_name=call.function.name,
            detail=detail,
        )
    )
