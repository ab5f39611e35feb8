"""What a world is doing now, chat by chat: running, queued, waiting for people, or idle.

Read from storage (``AgentWorld.chat_activity``), so it is true whichever process runs the
chats (SPEC O4: one runner per chat across processes)."""

from __future__ import annotations

from agentworld.agent_world import AgentWorld
from agentworld.server.schemas import ChatStatus, WorldStatus


async def world_status(aw: AgentWorld, world: str) -> WorldStatus:
    # ``ChatStatus`` documents ``ChatActivity`` over HTTP: the same fields, ``state`` included.
    chats = [
        ChatStatus.model_validate(chat, from_attributes=True)
        for chat in await aw.chat_activity(world)
    ]
    return WorldStatus(world=world, chats=chats)
