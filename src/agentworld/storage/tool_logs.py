"""Tool logs (SPEC E4): every execution's input, output, timing and status.

The start is written before the tool runs, so a crash mid-run leaves a
``running`` row behind: evidence that the call may have had effects, which the
approval flow uses to report it as interrupted instead of running it twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from agentworld.models import utc_now
from agentworld.storage import schema

if TYPE_CHECKING:
    from agentworld.storage.sql import SQLStorage

_TABLE = schema.tool_logs


class ToolLogStore:
    def __init__(self, storage: SQLStorage) -> None:
        self._storage = storage

    async def start(
        self, *, world: str, chat_id: str, agent: str, tool_call_id: str, tool_name: str, arguments: Any
    ) -> int:
        async with self._storage._write() as conn:
            result = await conn.execute(
                sa.insert(_TABLE)
                .values(
                    world=world,
                    chat_id=chat_id,
                    agent=agent,
                    tool_call_id=tool_call_id,
                    tool_name=tool_name,
                    input=arguments,
                    status="running",
                    started_at=utc_now().isoformat(),
                )
                .returning(_TABLE.c.seq)
            )
            return int(result.scalar_one())

    async def finish(self, seq: int, *, status: str, output: Any, duration_ms: float) -> None:
        async with self._storage._write() as conn:
            await conn.execute(
                sa.update(_TABLE)
                .where(_TABLE.c.seq == seq)
                .values(
                    status=status,
                    output=output,
                    finished_at=utc_now().isoformat(),
                    duration_ms=round(duration_ms, 3),
                )
            )

    async def find(
        self, world: str, *, chat_id: str | None = None, tool_call_id: str | None = None
    ) -> list[dict[str, Any]]:
        query = sa.select(_TABLE).where(_TABLE.c.world == world)
        if chat_id is not None:
            query = query.where(_TABLE.c.chat_id == chat_id)
        if tool_call_id is not None:
            query = query.where(_TABLE.c.tool_call_id == tool_call_id)
        async with self._storage._read() as conn:
            rows = (await conn.execute(query.order_by(_TABLE.c.seq))).all()
        return [
            {
                "toolCallId": r.tool_call_id,
                "toolName": r.tool_name,
                "agent": r.agent,
                "chatId": r.chat_id,
                "input": r.input,
                "output": r.output,
                "status": r.status,
                "startedAt": r.started_at,
                "finishedAt": r.finished_at,
                "durationMs": r.duration_ms,
            }
            for r in rows
        ]
