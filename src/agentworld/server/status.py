"""What a world is doing now, chat by chat: running, queued, waiting for people, or idle.

Read from storage, so it is true whichever process runs the chats (SPEC O4: one runner per
chat across processes)."""

from __future__ import annotations

from collections import Counter

from agentworld.agent_world import AgentWorld
from agentworld.server.schemas import ChatState, ChatStatus, WorldStatus


async def world_status(aw: AgentWorld, world: str) -> WorldStatus:
    chats = await aw.list_chats(world)
    queued = Counter(item.chat_id for item in await aw.storage.inbox.items(world))
    approvals = Counter(p.chat_id for p in await aw.storage.pending.find(world, kind="approval"))
    calls = Counter(p.chat_id for p in await aw.storage.pending.find(world, kind="client"))
    found = []
    for chat in chats:
        runner = await aw.storage.leases.holder(world, chat.chat_id) if queued[chat.chat_id] else None
        state: ChatState
        if runner is not None:
            state = "running"
        elif queued[chat.chat_id]:
            state = "queued"
        elif approvals[chat.chat_id] or calls[chat.chat_id]:
            state = "waiting"
        else:
            state = "idle"
        found.append(
            ChatStatus(
                chat_id=chat.chat_id,
                name=chat.name,
                state=state,
                queued_items=queued[chat.chat_id],
                runner=runner,
                pending_approvals=approvals[chat.chat_id],
                pending_tool_calls=calls[chat.chat_id],
            )
        )
    return WorldStatus(world=world, chats=found)
