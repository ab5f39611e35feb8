"""A chat's messages taken back over HTTP (SPEC K2): a person's message edited, which the world
then answers in the background (as for a posted message), or a message deleted with everything
after it. 404 for an unknown chat or message (one of another chat is unknown), 409 while another
process runs the chat, 422 for an edit of a message that is not a person's."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from agentworld.server.deps import AW, ERRORS, ChatId, WorldName
from agentworld.server.json_body import OneValuePerKeyRoute
from agentworld.server.responses import JSONResponse
from agentworld.server.schemas import MessageEdit, Posted

router = APIRouter(prefix="/api/worlds", responses=ERRORS, route_class=OneValuePerKeyRoute)

MessageId = Annotated[str, Path(description="The message's id (a transcript message of the chat).")]


@router.patch(
    "/{world}/chats/{chat}/messages/{message}",
    status_code=202,
    response_model=Posted,
    tags=["chats"],
)
async def edit_message(
    world: WorldName, chat: ChatId, message: MessageId, body: MessageEdit, aw: AW
) -> JSONResponse:
    """Replace a person's message: it and everything after it are removed, the new text is
    posted in its place from the same sender (a new message id, answered here) and the agents
    answer it in the background (follow them on the event stream)."""
    posted = await aw.post_edit(world, message, body.text, chat_id=chat)
    return JSONResponse({"chatId": posted.chat_id, "messageId": posted.message_id}, status_code=202)


@router.delete(
    "/{world}/chats/{chat}/messages/{message}",
    status_code=204,
    response_class=Response,
    tags=["chats"],
)
async def delete_messages(world: WorldName, chat: ChatId, message: MessageId, aw: AW) -> None:
    """Delete a message and everything after it in the chat (a tool result goes with the call it
    answers)."""
    await aw.delete_messages(world, message, chat_id=chat)
