"""One FIFO queue per chat (SPEC O4).

Items of one chat are processed one at a time, in the order they were put;
different chats run concurrently. A chat's worker task exists only while the
chat has work, so a thousand quiet chats cost nothing.

"Idle" has one meaning here: a chat is idle when nothing is queued for it and
nothing of it is being processed. Pending approvals are not work: a chat that
only waits for a person is idle.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

logger = logging.getLogger("agentworld.runtime")

Item = TypeVar("Item")


@dataclass
class _ChatState(Generic[Item]):
    items: deque[Item] = field(default_factory=deque)
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    worker: asyncio.Task[None] | None = None


class ChatQueues(Generic[Item]):
    """Owns the per-chat worker tasks; ``aclose`` cancels and awaits every one."""

    def __init__(
        self,
        process: Callable[[str, Item], Awaitable[None]],
        *,
        on_error: Callable[[str, Item, Exception], Awaitable[None]],
        on_drained: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._process = process
        self._on_error = on_error
        self._on_drained = on_drained
        self._chats: dict[str, _ChatState[Item]] = {}
        self._all_idle = asyncio.Event()
        self._all_idle.set()
        self._closed = False

    def put(self, chat_id: str, item: Item) -> None:
        if self._closed:
            raise RuntimeError("the world runtime is closed")
        state = self._chats.setdefault(chat_id, _ChatState())
        state.items.append(item)
        state.idle.clear()
        self._all_idle.clear()
        if state.worker is None:
            state.worker = asyncio.create_task(self._drain(chat_id, state), name=f"chat:{chat_id}")

    def is_idle(self, chat_id: str | None = None) -> bool:
        if chat_id is None:
            return self._all_idle.is_set()
        state = self._chats.get(chat_id)
        return state is None or state.idle.is_set()

    async def wait_idle(self, chat_id: str | None = None) -> None:
        if chat_id is None:
            await self._all_idle.wait()
            return
        state = self._chats.get(chat_id)
        if state is not None:
            await state.idle.wait()

    async def _drain(self, chat_id: str, state: _ChatState[Item]) -> None:
        try:
            while True:
                while state.items:
                    item = state.items[0]
                    try:
                        await self._process(chat_id, item)
                    except Exception as exc:
                        await self._report(chat_id, item, exc)
                    finally:
                        state.items.popleft()
                if self._on_drained is not None:
                    try:
                        await self._on_drained(chat_id)
                    except Exception as exc:
                        logger.exception("after-drain hook failed for chat %s", chat_id)
                        del exc
                if not state.items:  # the hook may have queued more work
                    break
        finally:
            state.worker = None
            state.idle.set()
            self._chats.pop(chat_id, None)
            if not self._chats:
                self._all_idle.set()

    async def _report(self, chat_id: str, item: Item, exc: Exception) -> None:
        try:
            await self._on_error(chat_id, item, exc)
        except Exception:
            logger.exception("error reporting failed for chat %s (original: %r)", chat_id, exc)

    async def aclose(self) -> None:
        """Stop accepting work, cancel the workers and wait for them to finish."""
        self._closed = True
        workers = [s.worker for s in self._chats.values() if s.worker is not None]
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
