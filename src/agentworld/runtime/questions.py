"""Questions an agent asks a person (``ask_user``, SPEC F3): ask, answer, expire.

A question is a waiting call like an approval request: a pending row of kind ``question``
whose id is the ``ask_user`` call's own id, written with the step that asks, so the loop
waits durably and any process can answer it. The answer (or the timeout) is stored as that
call's result, ``{"answer": TEXT}`` (or ``{"error": …}``), and the loop resumes once every
call of the batch has one. Nothing runs: asking is the whole of the tool.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from agentworld.errors import InvalidInputError, NotFoundError
from agentworld.models import Message, ToolCall, World
from agentworld.models.events import QuestionEvent
from agentworld.models.pending import PendingQuestion
from agentworld.models.text import text_problem
from agentworld.models.work import WAIT, Answer, InboxChange, StepResult
from agentworld.runtime.approvals import resume_for
from agentworld.runtime.turn_context import TurnContext
from agentworld.tools.executor import ToolResult
from agentworld.tools.registry import ToolContext


def ask_question(
    call: ToolCall,
    arguments: dict[str, Any],
    context: ToolContext,
    *,
    batch_id: str,
    trigger_sender: str,
    reply_to: str | None,
) -> StepResult:
    """The step that puts the call's question to a person; the loop then waits. The arguments
    were checked already (the tool's schema and ``definitions.question_problem``)."""
    options = [str(option) for option in arguments.get("options") or []]
    pending = PendingQuestion(
        world=context.world,
        tool_call_id=call.id,
        chat_id=context.chat_id,
        agent=context.agent,
        tool_name=call.function.name,
        arguments=call.function.arguments or "{}",
        batch_id=batch_id,
        trigger_sender=trigger_sender,
        reply_to=reply_to,
        question=str(arguments["question"]).strip(),
        options=options,
        allow_free_text=bool(arguments.get("allowFreeText", True)) or not options,
    )
    asked = _question_event(pending, "requested", {"allowFreeText": pending.allow_free_text})
    return StepResult(context.chat_id, announced=(asked,), waiting=pending, next=WAIT)


async def answerable(ctx: TurnContext, world: World, question_id: str) -> PendingQuestion:
    """The question ``question_id`` of the world, if its agent still holds the call that asked
    it (as SPEC A3 checks an approval); refused otherwise."""
    pending = await ctx.storage.pending.get(world.name, question_id)
    if not isinstance(pending, PendingQuestion):
        raise NotFoundError(f"no question {question_id!r} in world {world.name!r}")
    held = await ctx.storage.pending.holds_call(
        world.name, pending.agent, pending.batch_id, question_id
    )
    if not held:
        raise NotFoundError(f"question {question_id!r} is not held by agent {pending.agent!r}")
    return pending


def answer_problem(pending: PendingQuestion, text: str) -> str | None:
    """Why ``text`` cannot answer the question, or None: it is empty, not text, or — when only
    the options are taken — not one of them, exactly as written."""
    answer = text.strip()
    if not answer:
        return "the answer is empty"
    if (problem := text_problem(answer)) is not None:
        return f"the answer {problem}"
    if pending.options and not pending.allow_free_text and answer not in pending.options:
        listed = ", ".join(json.dumps(option) for option in pending.options)
        hint = ""
        if answer.isdecimal() and 1 <= int(answer) <= len(pending.options):
            hint = f" (for option {int(answer)}, answer {json.dumps(pending.options[int(answer) - 1])})"
        return f"{json.dumps(answer)} is not one of the options: {listed}{hint}"
    return None


def answer_question(pending: PendingQuestion, text: str, *, actor: str = "human") -> StepResult:
    """The step that records a person's answer — exactly once: refused when committed if the
    question was answered meanwhile — as the ``ask_user`` call's result ``{"answer": TEXT}``
    (the ends of the text trimmed), with the loop's resumption queued. Refused
    (``InvalidInputError``) for an answer ``answer_problem`` refuses."""
    if (problem := answer_problem(pending, text)) is not None:
        raise InvalidInputError(problem)
    content = ToolResult.ok(pending.tool_call_id, {"answer": text.strip()}).content
    answer = str(json.loads(content)["answer"])  # as the model reads it: secrets masked
    message = Message.tool_result(
        chat_id=pending.chat_id,
        agent=pending.agent,
        tool_call_id=pending.tool_call_id,
        content=content,
        batch_id=pending.batch_id,
    )
    given: dict[str, Any] = {"answer": answer, "actor": actor}
    return StepResult(
        pending.chat_id,
        said=(message,),
        memory=((pending.agent, message),),
        announced=(_question_event(pending, "answered", given),),
        answers=Answer("question", pending.tool_call_id, given),
        inbox=InboxChange(pending.chat_id, append=(resume_for(pending),)),
    )


def expire_question(world: World, pending: PendingQuestion) -> StepResult:
    """The step that ends a question nobody answered in time (the world's approval timeout):
    the model is told, and its loop resumes; refused when committed if it was answered
    meanwhile."""
    reason = (
        f"Nobody answered the question within {world.approval_timeout:g} s; "
        "go on without the answer, or ask again later"
    )
    message = Message.tool_result(
        chat_id=pending.chat_id,
        agent=pending.agent,
        tool_call_id=pending.tool_call_id,
        content=json.dumps({"error": reason}),
        batch_id=pending.batch_id,
    )
    return StepResult(
        pending.chat_id,
        said=(message,),
        memory=((pending.agent, message),),
        announced=(
            _question_event(pending, "answered", {"reason": "timeout", "actor": "timeout"}),
        ),
        answers=Answer(
            "question",
            pending.tool_call_id,
            {"reason": "timeout", "actor": "timeout"},
            status="expired",
        ),
        inbox=InboxChange(pending.chat_id, append=(resume_for(pending),)),
    )


def _question_event(
    pending: PendingQuestion, phase: Literal["requested", "answered"], detail: dict[str, Any]
) -> QuestionEvent:
    return QuestionEvent(
        world=pending.world,
        phase=phase,
        chat_id=pending.chat_id,
        agent=pending.agent,
        question_id=pending.tool_call_id,
        question=pending.question,
        options=list(pending.options),
        detail=dict(detail),
    )
