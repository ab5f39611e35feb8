"""Worlds, agents and chats over HTTP: the CRUD of ``world``, ``agent`` and ``chat`` commands,
the transcript (paged), an agent's memory, posting a message, and the Markdown export."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.responses import PlainTextResponse

from agentworld.agent_world import AgentWorld
from agentworld.documents import agent_doc, chat_doc, markdown_transcript, usage_report_doc
from agentworld.models import Chat, World
from agentworld.server.deps import (
    AW,
    ERRORS,
    MAX_POSITION,
    AgentName,
    ChatFilter,
    ChatId,
    LiveFeeds,
    WorldName,
    public_world,
)
from agentworld.server.json_body import OneValuePerKeyRoute
from agentworld.server.masks import keep_masked_base_url, keep_masked_secrets
from agentworld.server.responses import JSONResponse
from agentworld.server.schemas import (
    AgentCreate,
    AgentDoc,
    AgentList,
    AgentSettings,
    ChatBranch,
    ChatChange,
    ChatCreated,
    ChatDoc,
    ChatList,
    MemoryDoc,
    MessagePage,
    MessagePost,
    Posted,
    UsageReport,
    WorldCreate,
    WorldList,
    WorldSettings,
)

router = APIRouter(prefix="/api/worlds", responses=ERRORS, route_class=OneValuePerKeyRoute)

MAX_PAGE = 10_000


# -- worlds ------------------------------------------------------------------------------------


@router.get("", response_model=WorldList, tags=["worlds"])
async def list_worlds(aw: AW) -> JSONResponse:
    return JSONResponse({"worlds": [public_world(w) for w in await aw.list_worlds()]})


@router.post("", status_code=201, response_model=World, tags=["worlds"])
async def create_world(body: WorldCreate, aw: AW) -> JSONResponse:
    """Create a world (409 if the name is taken, regardless of case)."""
    changes = body.changes()
    if changes.get("mcp_config"):  # nothing is stored yet, so a mask stands for nothing
        changes["mcp_config"] = keep_masked_secrets(changes["mcp_config"], None)
    world = await aw.create_world(body.name, **changes)
    return JSONResponse(public_world(world), status_code=201)


@router.get("/{world}", response_model=World, tags=["worlds"])
async def get_world(world: WorldName, aw: AW) -> JSONResponse:
    return JSONResponse(public_world(await aw.get_world(world)))


@router.patch("/{world}", response_model=World, tags=["worlds"])
async def update_world(world: WorldName, body: WorldSettings, aw: AW) -> JSONResponse:
    """Change the settings given; ``null`` clears one that can be empty. In ``mcpConfig`` a
    secret's mask sent back as shown keeps the stored secret."""
    changes = body.changes()
    if changes.get("mcp_config"):
        stored = (await aw.get_world(world)).mcp_config
        changes["mcp_config"] = keep_masked_secrets(changes["mcp_config"], stored)
    return JSONResponse(public_world(await aw.update_world(world, **changes)))


@router.delete("/{world}", status_code=204, response_class=Response, tags=["worlds"])
async def delete_world(world: WorldName, aw: AW, feeds: LiveFeeds) -> None:
    """Delete a world with everything in it. Its event streams get what was published before,
    then a ``crud`` event that deletes the world, and end."""
    await aw.delete_world(world, watch=feeds.deleting)


# -- agents ------------------------------------------------------------------------------------


@router.get("/{world}/agents", response_model=AgentList, tags=["agents"])
async def list_agents(world: WorldName, aw: AW) -> JSONResponse:
    return JSONResponse({"agents": [agent_doc(a) for a in await aw.list_agents(world)]})


@router.post("/{world}/agents", status_code=201, response_model=AgentDoc, tags=["agents"])
async def create_agent(world: WorldName, body: AgentCreate, aw: AW) -> JSONResponse:
    changes = body.changes()
    if changes.get("base_url"):  # nothing is stored yet, so a mask stands for nothing
        changes["base_url"] = keep_masked_base_url(changes["base_url"], None)
    agent = await aw.create_agent(world, body.name, **changes)
    return JSONResponse(agent_doc(agent), status_code=201)


@router.get("/{world}/agents/{agent}", response_model=AgentDoc, tags=["agents"])
async def get_agent(world: WorldName, agent: AgentName, aw: AW) -> JSONResponse:
    """An agent with the tokens it used and what they cost."""
    found = await aw.get_agent(world, agent)
    spent = [g for g in await aw.usage_groups(world) if g.agent == found.name]
    return JSONResponse(agent_doc(found, await aw.agent_usage(world, found.name), spent))


@router.patch("/{world}/agents/{agent}", response_model=AgentDoc, tags=["agents"])
async def update_agent(
    world: WorldName, agent: AgentName, body: AgentSettings, aw: AW
) -> JSONResponse:
    changes = body.changes()
    if changes.get("base_url"):  # sent back as shown, its masked password stays as stored
        stored = (await aw.get_agent(world, agent)).base_url
        changes["base_url"] = keep_masked_base_url(changes["base_url"], stored)
    return JSONResponse(agent_doc(await aw.update_agent(world, agent, **changes)))


@router.delete("/{world}/agents/{agent}", status_code=204, response_class=Response, tags=["agents"])
async def delete_agent(world: WorldName, agent: AgentName, aw: AW) -> None:
    """Delete an agent; its pending approvals are cancelled (SPEC A3)."""
    await aw.delete_agent(world, agent)


@router.get("/{world}/agents/{agent}/memory", response_model=MemoryDoc, tags=["agents"])
async def agent_memory(
    world: WorldName, agent: AgentName, aw: AW, chat: ChatFilter = None
) -> JSONResponse:
    """The agent's full memory: tool calls and results included (``messages --agent``)."""
    found = await aw.agent_memory(world, agent, chat_id=chat)
    return JSONResponse(
        {"agent": agent, "chatId": chat, "messages": [m.to_json() for m in found]}
    )


# -- chats -------------------------------------------------------------------------------------


@router.get("/{world}/chats", response_model=ChatList, tags=["chats"])
async def list_chats(world: WorldName, aw: AW) -> JSONResponse:
    chats = await aw.list_chats(world)
    usage = await aw.chat_usage(world)
    spent = await aw.usage_groups(world)
    current = (await aw.get_world(world)).current_chat_id
    docs = [
        chat_doc(
            c,
            usage.get(c.chat_id),
            current=c.chat_id == current,
            spent=[g for g in spent if g.chat_id == c.chat_id],
        )
        for c in chats
    ]
    return JSONResponse({"chats": docs})


@router.post("/{world}/chats", status_code=201, response_model=ChatCreated, tags=["chats"])
async def new_chat(world: WorldName, aw: AW) -> JSONResponse:
    """Start a chat; it becomes the world's current chat."""
    chat = await aw.new_chat(world)
    return JSONResponse({"chatId": chat.chat_id}, status_code=201)


@router.get("/{world}/chats/{chat}", response_model=ChatDoc, tags=["chats"])
async def get_chat(world: WorldName, chat: ChatId, aw: AW) -> JSONResponse:
    found = await aw.get_chat(world, chat)
    return await _chat_response(aw, world, found)


@router.patch("/{world}/chats/{chat}", response_model=ChatDoc, tags=["chats"])
async def change_chat(world: WorldName, chat: ChatId, body: ChatChange, aw: AW) -> JSONResponse:
    """Rename the chat (``name``) and/or make it the world's current chat (``current: true``)."""
    found = await aw.get_chat(world, chat)
    if body.name is not None:
        found = await aw.rename_chat(world, chat, body.name)
    if body.current:
        found = await aw.use_chat(world, chat)
    return await _chat_response(aw, world, found)


async def _chat_response(aw: AgentWorld, world: str, found: Chat) -> JSONResponse:
    """One chat's document: its usage, and whether it is the world's current chat."""
    usage = (await aw.chat_usage(world, chat_id=found.chat_id)).get(found.chat_id)
    spent = await aw.usage_groups(world, chat_id=found.chat_id)
    current = (await aw.get_world(world)).current_chat_id == found.chat_id
    return JSONResponse(chat_doc(found, usage, current=current, spent=spent))


@router.get("/{world}/usage", response_model=UsageReport, tags=["chats"])
async def usage(world: WorldName, aw: AW, chat: ChatFilter = None) -> JSONResponse:
    """Tokens and cost of the agents' model calls, in total and by agent, chat and model;
    with ``chat``, of that chat alone (``agentworld usage --json``, SPEC O2)."""
    from agentworld.providers.prices import shipped_prices

    groups = await aw.usage_groups(world, chat_id=chat)
    return JSONResponse(
        usage_report_doc(world, groups, chat_id=chat, prices_as_of=shipped_prices().as_of)
    )


@router.delete("/{world}/chats/{chat}", status_code=204, response_class=Response, tags=["chats"])
async def delete_chat(world: WorldName, chat: ChatId, aw: AW) -> None:
    """Delete a chat with its messages (refused while it still has work)."""
    await aw.delete_chat(world, chat)


@router.post(
    "/{world}/chats/{chat}/branch", status_code=201, response_model=ChatCreated, tags=["chats"]
)
async def branch_chat(world: WorldName, chat: ChatId, body: ChatBranch, aw: AW) -> JSONResponse:
    """Start a chat whose transcript and every agent's memory are this chat's up to and
    including message ``messageId`` (404 for a message this chat's transcript does not hold);
    it becomes the world's current chat."""
    branch = await aw.branch_chat(world, body.message_id, chat_id=chat)
    return JSONResponse({"chatId": branch.chat_id}, status_code=201)


@router.get("/{world}/chats/{chat}/messages", response_model=MessagePage, tags=["chats"])
async def transcript(
    world: WorldName,
    chat: ChatId,
    aw: AW,
    after: Annotated[
        int, Query(ge=0, le=MAX_POSITION, description="Messages after this position (nextAfter).")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="At most this many.")] = 1000,
) -> JSONResponse:
    """The chat transcript, oldest first, a page at a time."""
    page = await aw.transcript_page(world, chat, after=after, limit=limit)
    return JSONResponse(
        {
            "messages": [m.to_json() for m in page.messages],
            "nextAfter": page.next_after,
            "lastEventId": page.log_head,
        }
    )


@router.post("/{world}/chats/{chat}/messages", status_code=202, response_model=Posted, tags=["chats"])
async def post_message(world: WorldName, chat: ChatId, body: MessagePost, aw: AW) -> JSONResponse:
    """Publish a message; answers at once with its id while the agents answer in the background
    (follow them on the event stream)."""
    message = await aw.post(world, body.text, chat_id=chat, sender=body.sender)
    return JSONResponse({"chatId": message.chat_id, "messageId": message.message_id}, status_code=202)


@router.get(
    "/{world}/chats/{chat}/export",
    responses={
        200: {
            "description": "The transcript as Markdown",
            "content": {"text/markdown": {"schema": {"type": "string"}}},
        }
    },
    tags=["chats"],
)
async def export_chat(world: WorldName, chat: ChatId, aw: AW) -> PlainTextResponse:
    """The transcript as Markdown (``chat export``)."""
    found = await aw.get_chat(world, chat)
    markdown = markdown_transcript(found, await aw.transcript(world, chat))
    return PlainTextResponse(markdown, media_type="text/markdown; charset=utf-8")
