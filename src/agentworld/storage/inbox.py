"""Each chat's persisted inbox (``models.work``): what it must still do, in order.

``apply_change`` is a function of a connection so that every write that causes work
(a posted message, an agent's answer, an approval's answer) queues it in its own
transaction; ``InboxStore`` reads the inbox and settles items on their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from agentworld.models import utc_now
from agentworld.models.work import WORK_ITEM, InboxChange, QueuedWork, WorkItem
from agentworld.storage import schema

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

_TABLE = schema.chat_inbox


def _work_json(work: WorkItem) -> dict[str, Any]:
    return work.model_dump(mode="json")


def _rows(world: str, chat_id: str, position: int, items: tuple[WorkItem, ...]) -> list[dict[str, Any]]:
    now = utc_now().isoformat()
    return [
        {"world": world, "chat_id": chat_id, "position": position, "work": _work_json(w), "created_at": now}
        for w in items
    ]


def apply_change(conn: sa.Connection, world: str, change: InboxChange | None) -> None:
    """Apply ``change`` inside the caller's transaction (see ``InboxChange``)."""
    if change is None:
        return
    chat = change.chat_id
    if change.current is not None and change.becomes is not None:
        where = sa.and_(_TABLE.c.world == world, _TABLE.c.item_id == change.current)
        if not change.becomes:
            conn.execute(sa.delete(_TABLE).where(where))
        else:
            first, *rest = change.becomes
            conn.execute(sa.update(_TABLE).where(where).values(work=_work_json(first)))
            if rest:
                position = conn.execute(sa.select(_TABLE.c.position).where(where)).scalar()
                if position is not None:
                    conn.execute(sa.insert(_TABLE), _rows(world, chat, int(position), tuple(rest)))
    if change.append:
        last = conn.execute(
            sa.select(sa.func.max(_TABLE.c.position)).where(
                _TABLE.c.world == world, _TABLE.c.chat_id == chat
            )
        ).scalar()
        position = int(last or 0) + 1
        for offset, work in enumerate(change.append):
            conn.execute(sa.insert(_TABLE), _rows(world, chat, position + offset, (work,)))


def next_item(conn: sa.Connection, world: str, chat_id: str) -> QueuedWork | None:
    """The chat's next item (inside the caller's transaction), or None when it has none."""
    row = conn.execute(
        sa.select(_TABLE.c.item_id, _TABLE.c.work)
        .where(_TABLE.c.world == world, _TABLE.c.chat_id == chat_id)
        .order_by(_TABLE.c.position, _TABLE.c.item_id)
        .limit(1)
    ).first()
    if row is None:
        return None
    return QueuedWork(int(row.item_id), chat_id, WORK_ITEM.validate_python(row.work))


class InboxStore:
    """Reads of the inbox, and settling an item when no other write goes with it."""

    def __init__(self, storage: StorageCore) -> None:
        self._storage = storage

    async def change(self, world: str, change: InboxChange) -> None:
        def write(conn: sa.Connection) -> None:
            apply_change(conn, world, change)

        await self._storage._run(write, write=True)

    async def first(self, world: str, chat_id: str) -> QueuedWork | None:
        """The chat's next item, or None when it has nothing left to do."""

        def read(conn: sa.Connection) -> QueuedWork | None:
            return next_item(conn, world, chat_id)

        return await self._storage._run(read, write=False)

    async def has_work(self, world: str, chat_id: str) -> bool:
        query = sa.select(_TABLE.c.item_id).where(
            _TABLE.c.world == world, _TABLE.c.chat_id == chat_id
        ).limit(1)

        def read(conn: sa.Connection) -> bool:
            return conn.execute(query).first() is not None

        return await self._storage._run(read, write=False)

    async def chats_with_work(self, world: str) -> list[str]:
        """Chats of the world with work left (to resume after a process stopped)."""
        query = (
            sa.select(_TABLE.c.chat_id)
            .where(_TABLE.c.world == world)
            .group_by(_TABLE.c.chat_id)
            .order_by(sa.func.min(_TABLE.c.item_id))
        )

        def read(conn: sa.Connection) -> list[str]:
            return [str(r.chat_id) for r in conn.execute(query)]

        return await self._storage._run(read, write=False)

    async def items(self, world: str, chat_id: str | None = None) -> list[QueuedWork]:
        """Every queued item (of one chat), in order: for inspection and tests."""
        query = sa.select(_TABLE.c.item_id, _TABLE.c.chat_id, _TABLE.c.work).where(
            _TABLE.c.world == world
        )
        if chat_id is not None:
            query = query.where(_TABLE.c.chat_id == chat_id)
        query = query.order_by(_TABLE.c.chat_id, _TABLE.c.position, _TABLE.c.item_id)

        def read(conn: sa.Connection) -> list[QueuedWork]:
            return [
                QueuedWork(int(r.item_id), str(r.chat_id), WORK_ITEM.validate_python(r.work))
                for r in conn.execute(query)
            ]

        return await self._storage._run(read, write=False)
