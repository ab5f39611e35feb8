"""What agents' model calls used and cost, summed in SQL (SPEC O2): by agent, chat and model
for ``agentworld usage``, and a chat's recorded cost for its budget.

A model call is an agent's assistant message in its own memory that carries token counts
(``messages.input_tokens``); its cost (``messages.cost_usd``) was recorded with it at the
prices of the day, or is NULL when unknown."""

from __future__ import annotations

from typing import Final

from agentworld.models.records import UsageGroup
from agentworld.storage.connection import Connection
from agentworld.storage.core import StorageCore
from agentworld.storage.statement import Sql

_CALLS: Final = (
    " FROM messages WHERE messages.world = :world_key AND messages.memory_owner IS NOT NULL"
    " AND messages.role = 'assistant' AND messages.input_tokens IS NOT NULL"
)
_GROUPS: Final = (
    "SELECT messages.memory_owner, messages.chat_id, messages.model, count(*) AS calls,"
    " coalesce(sum(messages.input_tokens), 0) AS input_tokens,"
    " coalesce(sum(messages.output_tokens), 0) AS output_tokens,"
    " sum(messages.cost_usd) AS cost_usd, count(*) - count(messages.cost_usd) AS unpriced"
    f"{_CALLS}{{where}}"
    " GROUP BY messages.memory_owner, messages.chat_id, messages.model"
    " ORDER BY messages.memory_owner, messages.chat_id, messages.model"
)
_WORLD_GROUPS: Final = Sql(_GROUPS.format(where=""))
_CHAT_GROUPS: Final = Sql(_GROUPS.format(where=" AND messages.chat_id = :chat_key"))
_CHAT_COST: Final = Sql(
    "SELECT coalesce(sum(messages.cost_usd), 0),"
    " coalesce(sum(CASE WHEN messages.memory_owner = :agent_key THEN messages.cost_usd END), 0)"
    f"{_CALLS} AND messages.chat_id = :chat_key"
)


class UsageStore:
    """Sums of the recorded model calls (see the module docstring)."""

    def __init__(self, storage: StorageCore) -> None:
        self._storage = storage

    async def groups(self, world: str, *, chat_id: str | None = None) -> list[UsageGroup]:
        """The world's calls (or one chat's) summed by agent, chat and model."""
        query = _WORLD_GROUPS if chat_id is None else _CHAT_GROUPS
        params = {"world_key": world} if chat_id is None else {"world_key": world, "chat_key": chat_id}

        def read(conn: Connection) -> list[UsageGroup]:
            return [
                UsageGroup(
                    agent=str(agent),
                    chat_id=str(chat),
                    model=model,
                    calls=int(calls),
                    input_tokens=int(inp),
                    output_tokens=int(out),
                    cost_usd=None if cost is None else float(cost),
                    unpriced_calls=int(unpriced),
                )
                for agent, chat, model, calls, inp, out, cost, unpriced in conn.execute(query, params)
            ]

        return await self._storage.in_transaction(read, write=False)

    async def chat_cost(self, world: str, chat_id: str, agent: str) -> tuple[float, float]:
        """USD recorded in the chat: by all its agents' calls, and by ``agent``'s (the calls
        whose cost is unknown count nothing)."""
        params = {"world_key": world, "chat_key": chat_id, "agent_key": agent}

        def read(conn: Connection) -> tuple[float, float]:
            row = conn.execute(_CHAT_COST, params).first()
            return (0.0, 0.0) if row is None else (float(row[0]), float(row[1]))

        return await self._storage.in_transaction(read, write=False)
