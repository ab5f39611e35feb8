"""``send`` on a terminal: what the world does, shown as it happens.

The view is the one of ``talk`` (``talk_view.EventView``) without its prompt: answers stream
in per agent with who is thinking and for how long, each tool call and result on one line,
errors marked. It follows this process's event bus, so it shows the work this process does;
on PostgreSQL also the world's event log and the chunks other processes relay (a Temporal
worker, another process that held the chat: ``live_elsewhere``). What another process did
and was not shown (on SQLite) is printed at the end from the stored transcript, like
everything when the output is not a terminal or is ``--json``.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from agentworld.cli.live_elsewhere import OnceEach, follow_elsewhere
from agentworld.cli.talk_view import EventView, Screen

if TYPE_CHECKING:
    from agentworld.models import Message
    from agentworld.runtime.world import WorldRuntime

TICK_SECONDS = 0.5
"""How often "planner is thinking… N s" is redrawn."""


class LiveView:
    """The chat's events as they come; which transcript messages were shown (``unshown``)."""

    def __init__(self, chat_id: str) -> None:
        self.view = EventView(Screen(), chat_id=chat_id, width=shutil.get_terminal_size().columns)

    def unshown(self, messages: Sequence[Message]) -> list[Message]:
        """The messages of ``messages`` that were not shown live, in their order."""
        return [m for m in messages if m.message_id not in self.view.shown]


@asynccontextmanager
async def live_view(runtime: WorldRuntime, chat_id: str) -> AsyncIterator[LiveView]:
    """Show the chat's events while the block runs."""
    live = LiveView(chat_id)
    show = OnceEach(live.view.on_event)
    unsubscribe = runtime.bus.subscribe(show, name="send:live")
    elsewhere = await follow_elsewhere(runtime, show)
    ticker = asyncio.create_task(_tick(live.view), name="send:tick")
    live.view.turn_started()
    try:
        yield live
    finally:
        if elsewhere is not None:
            await elsewhere()
        unsubscribe()
        ticker.cancel()
        await asyncio.gather(ticker, return_exceptions=True)
        live.view.close_stream()


async def _tick(view: EventView) -> None:
    while True:
        await asyncio.sleep(TICK_SECONDS)
        view.tick()
