"""Agents' memories kept between loop iterations, so a model call reads only what is new.

A memory is only appended to, but for a cut (an edit or a delete onward, SPEC K2), which
removes its rows from a message on: so each iteration asks storage for the agent's settings,
the rows after the last seq seen and the chat's count of cuts, in one read, and appends them —
unless the count changed since the entry was read, when storage read the memory from the start
and the entry is replaced. (A long-running process never shows the model a removed turn,
whichever process cut it.) Where rows may become visible out of seq order (PostgreSQL,
concurrent writers), the cache is not used and the memory is read whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentworld.models import Agent, Message
from agentworld.models.work import InboxChange
from agentworld.storage.sql import SQLStorage

MAX_ENTRIES = 2048


class _Entry:
    """One agent's memory of one chat as last read, and the position it was read up to. (A
    plain class: see ``events.bus._Subscription``.)"""

    __slots__ = ("cuts", "last_seq", "messages")

    def __init__(self) -> None:
        self.last_seq = 0
        self.cuts: int | None = None
        """The chat's count of cuts when it was read (None: not read yet)."""
        self.messages: list[Message] = []


class MemoryCache:
    def __init__(self, storage: SQLStorage) -> None:
        self._storage = storage
        self._entries: dict[tuple[str, str, str], _Entry] = {}

    async def agent_and_memory(
        self,
        world: str,
        agent: str,
        chat_id: str,
        *,
        remember: Sequence[Message] = (),
        inbox: InboxChange | None = None,
    ) -> tuple[Agent, list[Message]]:
        """The agent's settings and memory of the chat — after appending ``remember`` to it
        (and applying ``inbox``), in the same transaction, when there is something to append."""
        if not self._storage.commits_in_seq_order:
            if remember:
                settings, memory, _, _ = await self._storage.remember_and_read(
                    world, agent, chat_id, remember, 0, inbox=inbox
                )
                return settings, memory
            return await self._storage.agent_and_memory(world, agent, chat_id)
        key = (world, agent, chat_id)
        entry = self._entries.pop(key, None) or _Entry()
        if remember:
            settings, new, last, cuts = await self._storage.remember_and_read(
                world, agent, chat_id, remember, entry.last_seq, cuts_seen=entry.cuts, inbox=inbox
            )
        else:
            settings, new, last, cuts = await self._storage.agent_and_memory_since(
                world, agent, chat_id, entry.last_seq, entry.cuts
            )
        if entry.cuts is not None and cuts != entry.cuts:
            entry = _Entry()  # read from the start: messages were removed since
        entry.cuts = cuts
        return settings, self._keep(key, entry, settings, new, last)

    def _keep(
        self, key: tuple[str, str, str], entry: _Entry, settings: Agent, new: Sequence[Message], last: int
    ) -> list[Message]:
        entry.messages.extend(new)
        if settings.memory_window and len(entry.messages) > 2 * settings.memory_window:
            del entry.messages[: -settings.memory_window]  # never shown again: not kept either
        entry.last_seq = last
        self._entries[key] = entry  # re-inserted: the dict keeps the most recently used last
        if len(self._entries) > MAX_ENTRIES:
            del self._entries[next(iter(self._entries))]
        return list(entry.messages)

    def forget(self, world: str, agent: str | None = None, *, chat_id: str | None = None) -> None:
        """Drop cached memories (an agent or world was deleted; with ``chat_id``, that chat's:
        messages were removed from it)."""
        for key in [
            k
            for k in self._entries
            if k[0] == world and (agent is None or k[1] == agent) and (chat_id is None or k[2] == chat_id)
        ]:
            del self._entries[key]
