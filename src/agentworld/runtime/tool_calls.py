"""One batch of tool calls from one model response: check, authorize, run, store (SPEC O2, T4).

Every call of the batch gets its own outcome, in order, each a step stored against its
own ``tool_call_id`` as soon as it exists (SPEC O3). A call to a client-side tool or one
that asks a person (an approval, or an ``ask_user`` question) produces no result here: its step records it as waiting (``Wait``), and
the loop resumes when the answer comes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from agentworld import tracing
from agentworld.approval.decisions import Allow, AskUser, Deny
from agentworld.models import Message, ToolCall
from agentworld.models.pending import PendingClientCall
from agentworld.models.records import INTERRUPTED
from agentworld.models.work import WAIT, StepResult
from agentworld.redaction import redact
from agentworld.runtime import step_gate
from agentworld.runtime.approvals import request_approval
from agentworld.runtime.authorizer import named_tool, schema_problem
from agentworld.runtime.questions import ask_question
from agentworld.runtime.tool_run import Ran, ended, result_event, run_logged, tool_event
from agentworld.runtime.turn_context import Steps, TurnContext
from agentworld.tools.executor import ToolResult, run_tool
from agentworld.tools.registry import Tool, ToolContext, ToolRegistry
from agentworld.tools.validation import ArgumentError, parse_arguments


@dataclass(frozen=True)
class Batch:
    """The assistant message whose calls these are, and whom the agent was answering."""

    message_id: str
    trigger_sender: str
    reply_to: str | None


async def run_tool_calls(
    ctx: TurnContext,
    registry: ToolRegistry,
    calls: Sequence[ToolCall],
    context: ToolContext,
    batch: Batch,
    *,
    resumed: bool = False,
) -> Steps:
    """Handle every call of the batch in order, each with its own outcome, one step per call.
    A call the model may not make (``client.*``, unknown, malformed) gets an error result like
    any failed call, and the loop goes on: the iteration cap bounds a model that insists
    (SPEC O2, A8).

    ``resumed``: the batch was cut short by a process that stopped; a call that had started
    gets an "interrupted" error result instead of running again."""
    for call in calls:
        if resumed and await ctx.storage.tool_logs.interrupt(context.world, call.id, reason=INTERRUPTED):
            outcome: ToolResult | Ran | StepResult = ToolResult.interrupted(call.id)
        else:
            step_gate.enter("tool")  # on Temporal, each call is an activity of its own
            with tracing.tool_span(call.function.name, call.id) as span:
                outcome = await _handle(ctx, registry, call, context, batch)
                if span is not None:
                    outcome = _traced(span, outcome)
        # The world's settings and grants the batch read (``ToolContext.policy``) are fresh
        # for its first call only: a later one may come after a tool ran for minutes, and a
        # person may have revoked a grant meanwhile, so it is authorized from a fresh read.
        context = replace(context, policy=None)
        yield outcome if isinstance(outcome, StepResult) else _result_step(call, outcome, context, batch)


async def _handle(
    ctx: TurnContext, registry: ToolRegistry, call: ToolCall, context: ToolContext, batch: Batch
) -> ToolResult | Ran | StepResult:
    """The call's result (``Ran`` when the tool ran: with how the run ended), or the step that
    makes it wait (a person's approval or answer, a client)."""
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
    if tracing.enabled():
        tracing.note(_decided(decision))
    match decision:
        case Deny(reason=reason, by=by):
            return ToolResult.denial(call.id, reason, by=by)
        case AskUser() | Allow() if tool.asks_person:
            # A question is put to a person whatever the policy asks for: asking is asking.
            return ask_question(
                call,
                arguments,
                context,
                batch_id=batch.message_id,
                trigger_sender=batch.trigger_sender,
                reply_to=batch.reply_to,
            )
        case AskUser():
            return await request_approval(
                tool,
                call,
                arguments,
                context,
                batch_id=batch.message_id,
                trigger_sender=batch.trigger_sender,
                reply_to=batch.reply_to,
            )
        case Allow():
            pass

    if tool.location == "client":
        waiting = PendingClientCall(
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
        shown = tool_event(context, call.id, name, "pending", {"arguments": redact(arguments)})
        return StepResult(context.chat_id, events=(shown,), waiting=waiting, next=WAIT)

    return await run_logged(
        ctx, context, call.id, name, redact(arguments), lambda: run_tool(tool, call.id, arguments, context)
    )


def _decided(decision: Allow | Deny | AskUser) -> dict[str, str]:
    """A policy decision as a tool span's attributes: what was decided, and by whom."""
    match decision:
        case Allow():
            return {"agentworld.tool.decision": "allow", "agentworld.tool.decided_by": "policy"}
        case Deny(by=by):
            return {"agentworld.tool.decision": "deny", "agentworld.tool.decided_by": by}
        case AskUser():
            return {"agentworld.tool.decision": "ask", "agentworld.tool.decided_by": "human"}


def _traced(span: object, outcome: ToolResult | Ran | StepResult) -> ToolResult | Ran | StepResult:
    """How the call ended on its span; a call that now waits carries the trace context with
    it, so its answer (in any process) continues the trace."""
    if isinstance(outcome, StepResult):
        tracing.annotate(span, {"agentworld.tool.status": "waiting"})
        if outcome.waiting is not None:
            waiting = outcome.waiting.model_copy(update={"traceparent": tracing.traceparent()})
            return replace(outcome, waiting=waiting)
        return outcome
    tracing.annotate(span, ended(outcome))
    return outcome


def _result_step(call: ToolCall, outcome: ToolResult | Ran, context: ToolContext, batch: Batch) -> StepResult:
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
    return StepResult.spoken(
        message,
        by=context.agent,
        events=(result_event(context, call.id, call.function.name, result, end),),
        tool_log_end=end,
    )
