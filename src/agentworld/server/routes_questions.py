"""Questions agents ask people (``ask_user``, SPEC F3) over HTTP: the list, and the answer
that lets the agent go on. Like approvals: refused for an unknown or foreign id (404), once
answered or expired (409), and for an answer the question does not take (422)."""

from __future__ import annotations

from fastapi import APIRouter

from agentworld.documents import question_doc, run_doc
from agentworld.errors import InvalidInputError
from agentworld.models.pending import PendingQuestion
from agentworld.server.deps import AW, ERRORS, ChatFilter, Config, WorldName
from agentworld.server.errors import ApiError
from agentworld.server.json_body import OneValuePerKeyRoute
from agentworld.server.responses import JSONResponse
from agentworld.server.schemas import QuestionAnswer, QuestionList, RunDoc

router = APIRouter(prefix="/api/worlds", responses=ERRORS, route_class=OneValuePerKeyRoute)


@router.get("/{world}/questions", response_model=QuestionList, tags=["questions"])
async def list_questions(world: WorldName, aw: AW, chat: ChatFilter = None) -> JSONResponse:
    """Questions agents asked that wait for an answer, in every chat or one (overdue ones are
    ended first: the agent is told nobody answered)."""
    pending = await aw.questions(world, chat_id=chat)
    return JSONResponse({"questions": [question_doc(q) for q in pending]})


@router.post("/{world}/questions/{question_id}", response_model=RunDoc, tags=["questions"])
async def answer_question(
    world: WorldName, question_id: str, body: QuestionAnswer, aw: AW, config: Config
) -> JSONResponse:
    """Answer a question (404 for an unknown id or one no agent of the world holds, 409 once
    it is answered or expired, 422 ``invalid_input`` for an empty answer or one outside the
    options when only they are taken); the agent goes on until the chat is idle (at most the
    server's wait), and the answer is what that produced. Every client sees it on the event
    stream."""
    found = await aw.pending_call(world, question_id)  # an unknown world is a 404 too
    if not isinstance(found, PendingQuestion):
        raise ApiError(404, "not_found", f"no question {question_id!r} in world {world!r}")
    if found.status != "pending":
        raise ApiError(409, "conflict", f"question {question_id!r} is already {found.status}")
    try:
        result = await aw.answer(world, question_id, body.answer, timeout=config.run_wait_seconds)
    except InvalidInputError as refused:
        now = await aw.pending_call(world, question_id)
        if now is not None and now.status != "pending":  # answered meanwhile, expired, cancelled
            raise ApiError(409, "conflict", f"question {question_id!r} is already {now.status}") from None
        raise ApiError(422, "invalid_input", str(refused)) from None
    return JSONResponse(run_doc(result))
