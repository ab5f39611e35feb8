"""Approval requests and questions time out on time while a process runs (SPEC A7, F3).

Without a running process, an overdue request is denied by the next process that touches
the world (``WorldRuntime.resume_stopped_work``); these timers only make it punctual.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from agentworld.models import World
from agentworld.models.events import ApprovalEvent, QuestionEvent, WorldEvent
from agentworld.models.pending import PendingCall
from agentworld.storage.sql import SQLStorage

logger = logging.getLogger("agentworld.runtime")

Expire = Callable[[World, PendingCall], Awaitable[bool]]


class ApprovalTimers:
    """One timer per request this process saw asked; ``aclose`` cancels and awaits them."""

    def __init__(self, storage: SQLStorage, world: str, *, expire: Expire) -> None:
        self._storage = storage
        self._world = world
        self._expire = expire
        self._timers: set[asyncio.Task[None]] = set()

    async def on_approval(self, event: WorldEvent) -> None:
        """Bus subscriber: a request (or question) was asked; end it when its time is up, if
        still open."""
        match event:
            case ApprovalEvent(phase="requested"):
                call_id = event.approval_id
            case QuestionEvent(phase="requested"):
                call_id = event.question_id
            case _:
                return
        world = await self._storage.get_world(self._world)

        async def expire_later() -> None:
            await asyncio.sleep(world.approval_timeout)
            pending = await self._storage.pending.get(self._world, call_id)
            if pending is not None and pending.status == "pending":
                await self._expire(await self._storage.get_world(self._world), pending)

        timer = asyncio.create_task(expire_later(), name=f"expire:{call_id}")
        self._timers.add(timer)
        timer.add_done_callback(self._done)

    def _done(self, timer: asyncio.Task[None]) -> None:
        self._timers.discard(timer)
        if not timer.cancelled() and timer.exception() is not None:
            logger.error("approval timer failed", exc_info=timer.exception())

    async def aclose(self) -> None:
        for timer in self._timers:
            timer.cancel()
        await asyncio.gather(*self._timers, return_exceptions=True)
