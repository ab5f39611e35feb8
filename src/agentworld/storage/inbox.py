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
from agentworld.storage.connection import Connection

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

_TABLE = schema.chat_inbox
_bp = sa.bindparam

# Built once with bind parameters (see ``storage.queries``): an inbox change runs in the
# transaction of every step, so building its statements per call would cost more than
# running them.
_ITEM = sa.and_(_TABLE.c.world == _bp("world_key"), _TABLE.c.item_id == _bp("item_key"))
_OF_CHAT = sa.and_(_TABLE.c.world == _bp("world_key"), _TABLE.c.chat_id == _bp("chat_key"))
_DELETE_ITEM = sa.text("DELETE FROM chat_inbox WHERE world = :world_key AND item_id = :item_key")
"""SQL text, as the other statements every turn runs (``storage.queries``)."""
CHATS_WITH_WORK = (
    sa.select(_TABLE.c.chat_id)
    .where(_TABLE.c.world == _bp("world_key"))
    .group_by(_TABLE.c.chat_id)
    .order_by(sa.func.min(_TABLE.c.item_id))
)
_LEASED = (
    sa.select(schema.chat_leases.c.chat_id)
    .where(schema.chat_leases.c.world == _bp("world_key"))
    .order_by(schema.chat_leases.c.chat_id)
)
_REPLACE_ITEM = sa.update(_TABLE).where(_ITEM).values(work=_bp("new_work"))
_ITEM_POSITION = sa.select(_TABLE.c.position).where(_ITEM)
_LAST_POSITION = sa.select(sa.func.max(_TABLE.c.position)).where(_OF_CHAT)
_INSERT = sa.insert(_TABLE)
_NEXT = (
    sa.select(_TABLE.c.item_id, _TABLE.c.work)
    .where(_OF_CHAT)
    .order_by(_TABLE.c.position, _TABLE.c.item_id)
    .limit(1)
)
_ANY = sa.select(_TABLE.c.item_id).where(_OF_CHAT).limit(1)
_INSERT_INTO_EMPTY = sa.text(
    "INSERT INTO chat_inbox (world, chat_id, position, work, created_at)"
    " SELECT :world_key, :chat_key, 1, :work, :created_at"
    " WHERE NOT EXISTS (SELECT 1 FROM chat_inbox"
    " WHERE chat_inbox.world = :world_key AND chat_inbox.chat_id = :chat_key)"
    " RETURNING item_id"
).bindparams(
    _bp("world_key", type_=_TABLE.c.world.type),
    _bp("chat_key", type_=_TABLE.c.chat_id.type),
    _bp("work", type_=_TABLE.c.work.type),
    _bp("created_at", type_=_TABLE.c.created_at.type),
)
"""Queue an item only if the chat's inbox is empty: the check and the insert, one statement."""


def _work_json(work: WorkItem) -> dict[str, Any]:
    return work.model_dump(mode="json")


def _rows(
    world: str, chat_id: str, first_position: int, items: tuple[WorkItem, ...], *, step: int
) -> list[dict[str, Any]]:
    """Rows for ``items`` from ``first_position`` on, advancing ``step`` per item (0: items
    that share their predecessor's place keep their order by ``item_id``)."""
    now = utc_now().isoformat()
    return [
        {
            "world": world,
            "chat_id": chat_id,
            "position": first_position + step * offset,
            "work": _work_json(work),
            "created_at": now,
        }
        for offset, work in enumerate(items)
    ]


def apply_change(conn: Connection, world: str, change: InboxChange | None) -> QueuedWork | None:
    """Apply ``change`` inside the caller's transaction (see ``InboxChange``).

    Returns the chat's next item when the change appended it to an empty inbox — the
    caller that claims the chat in the same transaction knows its work without reading it
    back — else None (which says nothing about the inbox)."""
    if change is None:
        return None
    chat = change.chat_id
    if change.drop:
        conn.execute(_DELETE_ITEM, [{"world_key": world, "item_key": i} for i in change.drop])
    if change.current is not None and change.becomes is not None:
        item = {"world_key": world, "item_key": change.current}
        if not change.becomes:
            conn.execute(_DELETE_ITEM, item)
        else:
            first, *rest = change.becomes
            conn.execute(_REPLACE_ITEM, {**item, "new_work": _work_json(first)})
            if rest:
                position = conn.execute(_ITEM_POSITION, item).scalar()
                if position is not None:
                    conn.execute(_INSERT, _rows(world, chat, int(position), tuple(rest), step=0))
    if not change.append:
        return None
    last = conn.execute(_LAST_POSITION, {"world_key": world, "chat_key": chat}).scalar()
    rows = _rows(world, chat, int(last or 0) + 1, change.append, step=1)
    if last is not None:
        conn.execute(_INSERT, rows)
        return None
    head, *tail = rows
    (item_id,) = conn.execute(_INSERT, head).inserted_primary_key or (None,)
    if tail:
        conn.execute(_INSERT, tail)
    return None if item_id is None else QueuedWork(int(item_id), chat, change.append[0])


def queue_first(conn: Connection, world: str, chat_id: str, work: WorkItem) -> QueuedWork | None:
    """Queue ``work`` as the only item of the chat if its inbox is empty (inside the caller's
    transaction); None, queueing nothing, when it has work already. A post whose route is
    decided at once writes the item the route becomes, not the route it replaces."""
    params = {
        "world_key": world,
        "chat_key": chat_id,
        "work": _work_json(work),
        "created_at": utc_now().isoformat(),
    }
    item_id = conn.execute(_INSERT_INTO_EMPTY, params).scalar()
    return None if item_id is None else QueuedWork(int(item_id), chat_id, work)


def next_item(conn: Connection, world: str, chat_id: str) -> QueuedWork | None:
    """The chat's next item (inside the caller's transaction), or None when it has none."""
    row = conn.execute(_NEXT, {"world_key": world, "chat_key": chat_id}).first()
    if row is None:
        return None
    return QueuedWork(int(row.item_id), chat_id, WORK_ITEM.validate_python(row.work))


_OF_WORLD = (
    sa.select(_TABLE.c.item_id, _TABLE.c.chat_id, _TABLE.c.work)
    .where(_TABLE.c.world == _bp("world_key"))
    .order_by(_TABLE.c.chat_id, _TABLE.c.position, _TABLE.c.item_id)
)


def take_agent_work(conn: Connection, world: str, agent: str, chats_running: set[str]) -> list[str]:
    """Inside the caller's transaction (an agent's deletion): drop the agent's queued work
    (its turns, loops and resumptions), so that no process later continues it — under a new
    agent of the same name, perhaps. Work that is running now (its chat's first item, in one
    of ``chats_running``) is not dropped: the chats it runs in are returned, and the caller
    refuses instead."""
    first_of_chat: dict[str, int] = {}
    mine: list[tuple[int, str]] = []
    for row in conn.execute(_OF_WORLD, {"world_key": world}):
        first_of_chat.setdefault(row.chat_id, row.item_id)
        if isinstance(row.work, dict) and row.work.get("agent") == agent:
            mine.append((row.item_id, row.chat_id))
    running = sorted({chat for item, chat in mine if chat in chats_running and first_of_chat[chat] == item})
    if not running and mine:
        conn.execute(_DELETE_ITEM, [{"world_key": world, "item_key": item} for item, _chat in mine])
    return running


class InboxStore:
    """Reads of the inbox, and settling an item when no other write goes with it."""

    def __init__(self, storage: StorageCore) -> None:
        self._storage = storage

    async def change(self, world: str, change: InboxChange) -> None:
        def write(conn: Connection) -> None:
            apply_change(conn, world, change)

        await self._storage.in_transaction(write, write=True)

    async def first(self, world: str, chat_id: str) -> QueuedWork | None:
        """The chat's next item, or None when it has nothing left to do."""

        def read(conn: Connection) -> QueuedWork | None:
            return next_item(conn, world, chat_id)

        return await self._storage.in_transaction(read, write=False)

    async def has_work(self, world: str, chat_id: str) -> bool:
        params = {"world_key": world, "chat_key": chat_id}

        def read(conn: Connection) -> bool:
            return conn.execute(_ANY, params).first() is not None

        return await self._storage.in_transaction(read, write=False)

    async def chats_with_work(self, world: str) -> list[str]:
        """Chats of the world with work left (to resume after a process stopped): queued
        items first, then chats whose lease was never let go -- a process that stopped after
        the chat's last item but before its title and the release. (A chat held by a live
        process is among them; its runner gives way.)"""
        def read(conn: Connection) -> list[str]:
            params = {"world_key": world}
            queued = [str(r.chat_id) for r in conn.execute(CHATS_WITH_WORK, params)]
            seen = set(queued)
            return queued + [str(r.chat_id) for r in conn.execute(_LEASED, params) if r.chat_id not in seen]

        return await self._storage.in_transaction(read, write=False)

    async def items(self, world: str, chat_id: str | None = None) -> list[QueuedWork]:
        """Every queued item (of one chat), in order: for inspection and tests."""
        query = sa.select(_TABLE.c.item_id, _TABLE.c.chat_id, _TABLE.c.work).where(
            _TABLE.c.world == world
        )
        if chat_id is not None:
            query = query.where(_TABLE.c.chat_id == chat_id)
        query = query.order_by(_TABLE.c.chat_id, _TABLE.c.position, _TABLE.c.item_id)

        def read(conn: Connection) -> list[QueuedWork]:
            return [
                QueuedWork(int(r.item_id), str(r.chat_id), WORK_ITEM.validate_python(r.work))
                for r in conn.execute(query)
            ]

        return await self._storage.in_transaction(read, write=False)
