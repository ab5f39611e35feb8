"""Questions an agent asks a person (``ask_user``, SPEC F3): ask, answer, expire.

A question is a waiting call like an approval request: a pending row of kind ``question``
whose id is the ``ask_user`` call's own id, written with the step that asks, so the loop
waits durably and any process can answer it. The answer (or the timeout) is stored as that
call's result, and the loop resumes once every call of the batch has one.
"""

from __future__ import annotations

import json

from agentworld.models import Message, World
from agentworld.models.events import QuestionEvent
from agentworld.models.pending import PendingQuestion
from agentworld.models.work import Answer, InboxChange, StepResult
from agentworld.runtime.approvals import resume_for


def expire_question(world: World, pending: PendingQuestion) -> StepResult:
    """The step that ends a question nobody answered in time (the world's approval timeout):
    the model is told, and its loop resumes; refused when committed if it was answered
    meanwhile."""
    reason = f"Nobody answered the question within {world.approval_timeout:g} s"
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
    pending: PendingQuestion, phase: str, detail: dict[str, object]
) -> QuestionEvent:
    return QuestionEvent(
        world=pending.world,
        phase="requested" if phase == "requested" else "answered",
        chat_id=pending.chat_id,
        agent=pending.agent,
        question_id=pending.tool_call_id,
        question=pending.question,
        options=list(pending.options),
        detail=dict(detail),
    )
