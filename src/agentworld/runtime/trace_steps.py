"""What the world runtime adds to its work when traces are sent (``agentworld.tracing``).

The trace context goes with what is stored: the work a step queues carries the context it was
queued under and its events the trace id; a call that waited for a person gets the span of
its wait when its answer is applied, whichever process asked. With tracing off these cost a
check of one variable.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace

from agentworld import tracing
from agentworld.models import Message
from agentworld.models.message import utc_now
from agentworld.models.pending import PendingApproval, PendingCall
from agentworld.models.work import StepResult


def posting(world: str, message: Message) -> dict[str, str]:
    """The attributes of the span of a message posted into a chat."""
    return {
        "agentworld.world": world,
        "gen_ai.conversation.id": message.chat_id,
        "agentworld.message.id": message.message_id,
        "agentworld.message.sender": message.sender,
    }


def traced(step: StepResult) -> StepResult:
    """``step`` with the current trace context on the work it queues and its trace id on its
    events, so whoever does that work — here or in another process — continues the trace."""
    trace_id = tracing.trace_id()
    inbox = step.inbox
    if inbox is not None:
        inbox = replace(
            inbox,
            append=tracing.stamped(inbox.append),
            becomes=tracing.stamped(inbox.becomes) if inbox.becomes else inbox.becomes,
        )
    if trace_id is None:
        return replace(step, inbox=inbox)
    tagged = {"trace_id": trace_id}
    return replace(
        step,
        inbox=inbox,
        events=tuple(e if e.trace_id else e.model_copy(update=tagged) for e in step.events),
        announced=tuple(e if e.trace_id else e.model_copy(update=tagged) for e in step.announced),
    )


_WAITS = {"approval": "await_approval", "question": "await_answer", "client": "await_client"}


def wait_ended(
    pending: PendingCall, *, decision: str, by: str, scope: str | None = None, status: str = "answered"
) -> AbstractContextManager[object]:
    """The time ``pending`` waited, as a span from its request to now under the trace context
    it was stored with (the request may have been made by another process); current while its
    answer is applied, so the work the answer queues continues that trace."""
    if not tracing.enabled():
        return nullcontext()
    original = pending.original_call_id if isinstance(pending, PendingApproval) else pending.tool_call_id
    attributes: dict[str, str] = {
        "gen_ai.tool.name": pending.tool_name,
        "gen_ai.tool.call.id": original,
        "gen_ai.agent.name": pending.agent,
        "gen_ai.conversation.id": pending.chat_id,
        "agentworld.wait.kind": pending.kind,
        "agentworld.wait.id": pending.tool_call_id,
        "agentworld.wait.status": status,
        "agentworld.approval.decision": decision,
        "agentworld.approval.decided_by": by,
    }
    if scope is not None:
        attributes["agentworld.approval.scope"] = scope
    name = f"{_WAITS[pending.kind]} {pending.tool_name}"
    return tracing.waited(name, pending.traceparent, pending.created_at, utc_now(), attributes)
