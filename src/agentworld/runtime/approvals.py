"""The human approval flow (SPEC A1–A10): request, answer, run, expire.

A request is data in the agent's memory: an injected assistant message whose
``client.requestApproval`` call id is the approval id, plus a pending row that
makes "answered once" an atomic update; the request, its pending row, its audit entry and its
transcript message are one step, committed in one transaction. The answer is stored as the ``tool``
result of that call. Approving runs the original call and stores its real result
against the ORIGINAL call id; denying (or a timeout) stores an error result there.
Either way the loop resumes once every call of the model's response has a result.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any, Literal, assert_never

from agentworld import tracing
from agentworld.approval.decisions import Allow, AskUser, Deny
from agentworld.approval.grants import GrantScope, grant_for
from agentworld.errors import NotFoundError
from agentworld.models import Message, ToolCall, World, new_id, utc_now
from agentworld.models.events import ApprovalEvent, CrudEvent
from agentworld.models.pending import (
    PendingApproval,
    PendingCall,
    PendingClientCall,
    PendingQuestion,
    ShellDisplay,
)
from agentworld.models.records import INTERRUPTED, AuditEntry
from agentworld.models.work import (
    WAIT,
    Answer,
    InboxChange,
    QueuedWork,
    Resume,
    RunApproved,
    StepResult,
)
from agentworld.policy.rules import ALWAYS_ALLOW_PRIORITY
from agentworld.runtime import step_gate
from agentworld.runtime.approval_edits import EditedCall, edit_note, edit_of
from agentworld.runtime.file_changes import shown_change, with_shown_file
from agentworld.runtime.llm_input import APPROVAL_ID_PREFIX, APPROVAL_TOOL
from agentworld.runtime.path_views import redirect_resolver, resolved_views
from agentworld.runtime.policy_files import kept_from_tools
from agentworld.runtime.tool_run import Ran, ended, result_event, run_logged
from agentworld.runtime.turn_context import TurnContext
from agentworld.tools.executor import ToolResult, run_tool
from agentworld.tools.registry import Tool, ToolContext, ToolRegistry
from agentworld.tools.validation import ArgumentError, parse_arguments

APPROVAL_OPTIONS = ("deny", "once", "session", "always")
Decision = Literal["approve", "deny"]
Scope = Literal["once", "session", "always"]


async def request_approval(
    tool: Tool,
    call: ToolCall,
    arguments: dict[str, Any],
    context: ToolContext,
    *,
    batch_id: str,
    trigger_sender: str,
    reply_to: str | None,
) -> StepResult:
    """The step that asks a person about ``call``; the loop then waits (SPEC A1).

    The request shows exactly what will run (``approval.display``); the same view goes to
    the pending row and the audit log, so what was approved can be reconstructed."""
    # Imported on first use, like the policy engine (see ``runtime.authorizer``).
    from agentworld.approval.display import approval_message, shown_arguments

    args_shown = shown_arguments(tool.name, arguments)
    prompt, view = approval_message(
        tool.name,
        tool.approval.message,
        context.agent,
        arguments,
        working_dir=context.working_dir or os.getcwd(),
    )
    extra: dict[str, Any] = {"shell": view.to_json()} if view is not None else {}
    contained = await context.containment_now(tool)
    extra["sandbox"] = {**contained.to_json(), "summary": contained.describe()}  # SPEC C1
    change = await shown_change(tool, arguments, context)  # SPEC F1: the diff approved
    if change is not None:
        extra["diff"] = change.diff
    approval_id = new_id(APPROVAL_ID_PREFIX)
    request = Message(
        chat_id=context.chat_id,
        role="assistant",
        sender=context.agent,
        agent_id=context.agent,
        tool_calls=[
            ToolCall.of(
                approval_id,
                APPROVAL_TOOL,
                json.dumps(
                    {
                        "toolName": tool.name,
                        "toolArguments": args_shown,
                        "toolCallId": call.id,
                        "message": prompt,
                        "options": list(APPROVAL_OPTIONS),
                        **extra,
                    }
                ),
            )
        ],
        reply_to_message_id=batch_id,
    )
    pending = PendingApproval(
        world=context.world,
        tool_call_id=approval_id,
        chat_id=context.chat_id,
        agent=context.agent,
        tool_name=tool.name,
        arguments=call.function.arguments or "{}",
        batch_id=batch_id,
        trigger_sender=trigger_sender,
        reply_to=reply_to,
        original_call_id=call.id,
        request_message_id=request.message_id,
        message=prompt,
        tool_args=args_shown,
        shell=ShellDisplay.model_validate(view.to_json()) if view is not None else None,
        sandbox=extra["sandbox"],
        diff=change.diff if change is not None else None,
        file=change.file if change is not None else None,
    )
    audited = AuditEntry(
        event="request",
        actor=context.agent,
        approval_id=approval_id,
        agent=context.agent,
        chat_id=context.chat_id,
        tool_name=tool.name,
        tool_args=args_shown,
        detail={"message": prompt, **extra, **({"file": change.file.model_dump()} if change else {})},
    )
    return StepResult(
        context.chat_id,
        said=(request,),
        memory=((context.agent, request),),
        announced=(_approval_event(pending, "requested", {"message": prompt, "toolArgs": args_shown, **extra}),),
        waiting=pending,
        audit=audited,
        next=WAIT,
    )


async def answerable(ctx: TurnContext, world: World, approval_id: str) -> PendingApproval:
    """The approval request ``approval_id`` of the world, if its agent still holds it (the
    ownership check of SPEC A3); refused otherwise."""
    pending = await ctx.storage.pending.get(world.name, approval_id)
    if not isinstance(pending, PendingApproval):
        raise NotFoundError(f"no approval request {approval_id!r} in world {world.name!r}")
    held = await ctx.storage.pending.holds_call(
        world.name, pending.agent, pending.request_message_id, approval_id
    )
    if not held:
        raise NotFoundError(f"approval {approval_id!r} is not held by agent {pending.agent!r}")
    return pending


def answer_approval(
    pending: PendingApproval,
    *,
    decision: Decision,
    scope: Scope = "once",
    actor: str = "human",
    edit: EditedCall | None = None,
) -> StepResult:
    """The step that records a person's answer (A2–A5) — exactly once: refused when committed
    if the request was answered meanwhile — with the work it queues: the approved call's run,
    or the loop's resumption with the denial as the call's result. The answer goes into the
    agent's memory and the transcript, and into the audit log with what the person was shown.

    ``edit``: the call as the person corrected it (``approval_edits.checked_edit``, SPEC F2).
    The stored answer carries it, so it is what runs; the answer in memory carries it masked,
    so the model's view shows the call as it ran; the audit entry and the event hold both."""
    if decision == "deny":
        scope, edit = "once", None
    original = pending.original_call_id
    said: dict[str, Any] = {"decision": decision, "scope": scope}
    answer, announced = {**said, "actor": actor}, {**said, "actor": actor}
    audit = _decision_entry(pending, actor=actor, decision=decision, scope=scope, detail=_shown(pending))
    if edit is not None:
        said["arguments"], answer["arguments"] = edit.for_model, edit.arguments
        announced |= {"edited": True, "toolArgs": edit.shown}
        audit = replace(audit, tool_args=edit.shown, detail=edit.audit_detail(audit.detail or {}, pending.tool_args))
    results = [_answer_message(pending, said)]
    if decision == "deny":
        denial = ToolResult.error(original, f"User denied approval for {pending.tool_name}")
        results.append(_result_message(pending, original, denial.content))
    next_work = RunApproved(approval_id=pending.tool_call_id) if decision == "approve" else resume_for(pending)
    return StepResult(
        pending.chat_id,
        said=tuple(results),
        memory=tuple((pending.agent, m) for m in results),
        announced=(_approval_event(pending, "answered", announced),),
        answers=Answer("approval", pending.tool_call_id, answer),
        audit=audit,
        inbox=InboxChange(pending.chat_id, append=(next_work,)),
    )


async def remember_grant(ctx: TurnContext, world: World, pending: PendingApproval, scope: GrantScope) -> None:
    """Remember a "session" or "always" approval as a grant, once the answer is committed."""
    context = ToolContext.for_world(world, chat_id=pending.chat_id, agent=pending.agent)
    await _remember(ctx, pending, scope, context, world)


def resume_for(call: PendingCall) -> Resume:
    """The work that continues ``call``'s loop once its batch has every result."""
    return Resume(
        agent=call.agent, batch_id=call.batch_id, answer_to=call.trigger_sender, reply_to=call.reply_to
    )


async def run_approved(
    ctx: TurnContext, world: World, queued: QueuedWork, item: RunApproved, registry: ToolRegistry
) -> StepResult:
    """Run the approved call and store its real result against the original call id; its
    start is committed first, so a process that finds it started reports it interrupted.

    The call is authorized again first, against the policy in force now (SPEC C3): a DENY
    rule added while it waited refuses it as a policy denial the model reads, and nothing
    runs; ASK_USER is what the person has just answered."""
    asked = await ctx.storage.pending.get(world.name, item.approval_id)
    if not isinstance(asked, PendingApproval):
        return StepResult(queued.chat_id, inbox=InboxChange(queued.chat_id, current=queued.item_id, becomes=()))
    # A call a person corrected runs (and is authorized, logged and reported) as corrected.
    edit = edit_of(asked, world.working_dir)
    call = asked if edit is None else asked.model_copy(update={"arguments": edit.arguments, "tool_args": edit.shown})
    original = call.original_call_id
    protected, private = kept_from_tools(ctx.storage.url)
    context = ToolContext.for_world(
        world, chat_id=call.chat_id, agent=call.agent, protected=protected, private=private
    )
    outcome: ToolResult | Ran
    if not item.started:
        step_gate.enter("tool")  # on Temporal, the approved call is an activity of its own
    with tracing.tool_span(call.tool_name, original, phase="approved") as span:
        if item.started:
            await ctx.storage.tool_logs.interrupt(world.name, original, reason=INTERRUPTED)
            outcome = ToolResult.interrupted(original)
        elif (refused := await _authorized_again(ctx, context, call, registry.get(call.tool_name))) is not None:
            outcome = refused
        else:
            outcome = await _run_once(ctx, context, queued, call, registry.get(call.tool_name))
        if span is not None:
            tracing.annotate(span, ended(outcome, interrupted=item.started))
    result, end = (outcome.result, outcome.end) if isinstance(outcome, Ran) else (outcome, None)
    content = result.content if edit is None else f"{edit_note(edit)}\n{edit.masked(result.content)}"
    return StepResult.spoken(
        _result_message(call, original, content),
        by=call.agent,
        finishes=queued.item_id,
        then=(resume_for(call),),
        events=(result_event(context, original, call.tool_name, result, end),),
        tool_log_end=end,
    )


async def _authorized_again(
    ctx: TurnContext, context: ToolContext, call: PendingApproval, tool: Tool | None
) -> ToolResult | None:
    """The policy denial of an approved call, or None when it may run. A call that cannot
    run at all (its tool gone, its arguments unreadable) is left to ``_run_once``, which
    gives it the error result it would get anyway."""
    if tool is None:
        return None
    try:
        arguments = parse_arguments(call.arguments)
    except ArgumentError:
        return None
    if (wider := await _wider_than_shown(context, call, tool)) is not None:
        return ToolResult.denial(call.original_call_id, wider, by="policy")
    approved = replace(context, approval_id=call.tool_call_id)
    match await ctx.authorizer.authorize(tool, arguments, approved):
        case Deny(reason=reason, by=by):
            return ToolResult.denial(call.original_call_id, reason, by=by)
        case Allow() | AskUser():
            return None


async def _wider_than_shown(context: ToolContext, call: PendingApproval, tool: Tool) -> str | None:
    """Why the call may not run as approved when it would now reach further than the person
    was shown (SPEC C1): shown contained, it runs only in the same box -- not uncontained
    (bubblewrap gone, the setting turned off), not with the network, not writing elsewhere.
    A request shown uncontained may run in any box."""
    shown = call.sandbox
    if not shown.active:
        return None
    now = await context.containment_now(tool)
    if now.active and now.network == shown.network and list(now.writable) == list(shown.writable):
        return None
    return (
        f"not run: it was approved as \"{shown.summary}\", and it would now run "
        f"\"{now.describe()}\"; ask again if it should run that way"
    )


async def _run_once(
    ctx: TurnContext, context: ToolContext, queued: QueuedWork, call: PendingApproval, tool: Tool | None
) -> Ran:
    """Run the approved call once: its start is committed with the work item marked started."""
    original = call.original_call_id
    context = with_shown_file(context, call)  # a file tool writes only what was shown (F1)

    async def run() -> ToolResult:
        if tool is None:
            return ToolResult.error(original, f"tool {call.tool_name!r} is no longer available")
        try:
            arguments = parse_arguments(call.arguments)
        except ArgumentError as exc:
            return ToolResult.error(original, str(exc))
        return await run_tool(tool, original, arguments, context)

    started = InboxChange(
        queued.chat_id,
        current=queued.item_id,
        becomes=(RunApproved(approval_id=call.tool_call_id, started=True, traceparent=tracing.traceparent()),),
    )
    return await run_logged(ctx, context, original, call.tool_name, call.tool_args, run, inbox=started)


def _decision_entry(
    pending: PendingApproval, *, actor: str, decision: Decision, scope: Scope, detail: dict[str, Any]
) -> AuditEntry:
    """Every answer to a request — a person's or the timeout's — in the audit log (SPEC A9)."""
    return AuditEntry(
        event="decision",
        actor=actor,
        approval_id=pending.tool_call_id,
        agent=pending.agent,
        chat_id=pending.chat_id,
        tool_name=pending.tool_name,
        tool_args=pending.tool_args,
        decision=decision,
        scope=scope,
        latency_ms=(utc_now() - pending.created_at).total_seconds() * 1000,
        detail=detail,
    )


def _shown(pending: PendingApproval) -> dict[str, Any]:
    """What the person was shown, as the audit log records it with the decision."""
    if pending.shell is None:
        return {"message": pending.message}
    return {"message": pending.message, "shell": pending.shell.to_json()}


def expire(world: World, pending: PendingCall) -> StepResult | None:
    """The step that denies an unanswered request whose time is up; the model is told (SPEC
    A7), and the loop's resumption is queued. None for a client call, which has no time limit
    (it waits for its result); a request answered meanwhile refuses the step when committed."""
    match pending:
        case PendingApproval():
            original = pending.original_call_id
        case PendingQuestion():
            from agentworld.runtime.questions import expire_question  # (module docstring)

            return expire_question(world, pending)
        case PendingClientCall():
            return None
        case _:
            assert_never(pending)
    reason = (
        f"Approval request for {pending.tool_name} timed out after {world.approval_timeout:g} s; "
        "the tool was not run"
    )
    results = [
        _answer_message(pending, {"decision": "deny", "scope": "once", "reason": "timeout"}),
        _result_message(pending, original, json.dumps({"error": reason})),
    ]
    return StepResult(
        pending.chat_id,
        said=tuple(results),
        memory=tuple((pending.agent, m) for m in results),
        announced=(_approval_event(pending, "answered", {"decision": "deny", "reason": "timeout"}),),
        answers=Answer(
            "approval", pending.tool_call_id, {"decision": "deny", "reason": "timeout", "actor": "timeout"},
            status="expired",
        ),  # fmt: skip
        audit=_decision_entry(
            pending, actor="timeout", decision="deny", scope="once", detail={"reason": "timeout"}
        ),
        inbox=InboxChange(pending.chat_id, append=(resume_for(pending),)),
    )


async def _remember(
    ctx: TurnContext, pending: PendingCall, scope: GrantScope, context: ToolContext, world: World
) -> None:
    # A person's correction is what the grant covers, never the call the model wrote (SPEC F2).
    approved = pending.arguments_to_run if isinstance(pending, PendingApproval) else pending.arguments
    try:
        arguments = parse_arguments(approved)
    except ArgumentError:
        return
    # A file tool's grant names the file the call really opened too (``notes.txt -> .env``):
    # the authorizer asks a grant to cover both, so without it the person is asked every time.
    tool = (await ctx.tools_for(world)).get(pending.tool_name)
    views = resolved_views(tool, arguments, context.working_dir) if tool is not None else []
    grant = grant_for(
        scope,
        world=context.world,
        tool_name=pending.tool_name,
        arguments=arguments,
        agent=pending.agent,
        chat_id=pending.chat_id,
        approval_id=pending.tool_call_id,
        views=views,
        # What the person saw written: the line's redirect targets, placed in the working directory.
        resolve=redirect_resolver(arguments, context.working_dir),
    )
    if grant is None:
        return
    await ctx.storage.approvals.add_grant(grant)
    if scope == "always":
        rule = {
            "toolName": grant.tool_name,
            "rootCommands": sorted(grant.roots) if grant.roots else None,
            "redirectTargets": sorted(grant.redirect_targets) if grant.redirect_targets else None,
            "priority": ALWAYS_ALLOW_PRIORITY,
            "decision": "ALLOW",
        }
        await ctx.bus.publish(
            CrudEvent(
                world=context.world, operation="create", entity="policy",
                name=f"always:{grant.grant_id}", chat_id=context.chat_id, data=rule,
            )
        )


def _answer_message(pending: PendingCall, answer: dict[str, Any]) -> Message:
    return _result_message(pending, pending.tool_call_id, json.dumps(answer))


def _result_message(pending: PendingCall, tool_call_id: str, content: str) -> Message:
    return Message.tool_result(
        chat_id=pending.chat_id,
        agent=pending.agent,
        tool_call_id=tool_call_id,
        content=content,
        batch_id=pending.batch_id,
    )


def _approval_event(
    pending: PendingCall, phase: Literal["requested", "answered"], detail: dict[str, Any]
) -> ApprovalEvent:
    return ApprovalEvent(
        world=pending.world,
        phase=phase,
        chat_id=pending.chat_id,
        agent=pending.agent,
        approval_id=pending.tool_call_id,
        tool_name=pending.tool_name,
        detail=detail,
    )
