"""Each chat's persisted inbox (``models.work``): what it must still do, in order.

``apply_change`` is a function of a connection so that every write that causes work
(a posted message, an agent's answer, an approval's answer) queues it in its own
transaction; ``InboxStore`` reads the inbox and commits a change no other write goes with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentworld.models import utc_now
from agentworld.models.work import WORK_ITEM, InboxChange, QueuedWork, WorkItem
from agentworld.storage.connection import Connection
from agentworld.storage.statement import Sql

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

# Module constants: an inbox change runs in the transaction of every step, so building its
# statements per call would cost more than running them.
_ITEM = "chat_inbox.world = :world_key AND chat_inbox.item_id = :item_key"
_OF_CHAT = "chat_inbox.world = :world_key AND chat_inbox.chat_id = :chat_key"
_DELETE_ITEM = Sql(f"DELETE FROM chat_inbox WHERE {_ITEM}")
CHATS_WITH_WORK = Sql(
    "SELECT chat_inbox.chat_id FROM chat_inbox WHERE chat_inbox.world = :world_key"
    " GROUP BY chat_inbox.chat_id ORDER BY min(chat_inbox.item_id)"
)
_LEASED = Sql(
    "SELECT chat_leases.chat_id FROM chat_leases WHERE chat_leases.world = :world_key"
    " ORDER BY chat_leases.chat_id"
)
_REPLACE_ITEM = Sql(
    f"UPDATE chat_inbox SET work = :new_work WHERE {_ITEM}", json_params=("new_work",)
)
_ITEM_POSITION = Sql(f"SELECT chat_inbox.position FROM chat_inbox WHERE {_ITEM}")
_LAST_POSITION = Sql(f"SELECT max(chat_inbox.position) FROM chat_inbox WHERE {_OF_CHAT}")
_INSERT_TEXT = (
    "INSERT INTO chat_inbox (world, chat_id, position, work, created_at)"
    " VALUES (:world, :chat_id, :position, :work, :created_at)"
)
_INSERT = Sql(_INSERT_TEXT, json_params=("work",))
"""Rows of ``_rows``, one or many."""
_INSERT_ONE = Sql(_INSERT_TEXT + " RETURNING item_id", json_params=("work",))
"""One row of ``_rows``, and its ``item_id``."""
_NEXT = Sql(
    f"SELECT chat_inbox.item_id, chat_inbox.work FROM chat_inbox WHERE {_OF_CHAT}"
    " ORDER BY chat_inbox.position, chat_inbox.item_id LIMIT 1",
    columns={"work": "json"},
)
_ANY = Sql(f"SELECT chat_inbox.item_id FROM chat_inbox WHERE {_OF_CHAT} LIMIT 1")
def _work_json(work: WorkItem) -> dict[str, Any]:
    unset = {name for name in ("traceparent", "unattended", "calls") if not getattr(work, name, None)}
    return work.model_dump(mode="json", exclude=unset or None)


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
    item_id = conn.execute(_INSERT_ONE, head).scalar_one()
    if tail:
        conn.execute(_INSERT, tail)
    return QueuedWork(int(item_id), chat, change.append[0])


def next_item(conn: Connection, world: str, chat_id: str) -> QueuedWork | None:
    """The chat's next item (inside the caller's transaction), or None when it has none."""
    row = conn.execute(_NEXT, {"world_key": world, "chat_key": chat_id}).first()
    if row is None:
        return None
    return QueuedWork(int(row.item_id), chat_id, WORK_ITEM.validate_python(row.work))


_ITEMS_OF_WORLD = (
    "SELECT chat_inbox.item_id, chat_inbox.chat_id, chat_inbox.work FROM chat_inbox"
    " WHERE chat_inbox.world = :world_key"
)
_IN_CHAT_ORDER = " ORDER BY chat_inbox.chat_id, chat_inbox.position, chat_inbox.item_id"
_OF_WORLD = Sql(_ITEMS_OF_WORLD + _IN_CHAT_ORDER, columns={"work": "json"})
_OF_ONE_CHAT = Sql(
    _ITEMS_OF_WORLD + " AND chat_inbox.chat_id = :chat_key" + _IN_CHAT_ORDER,
    columns={"work": "json"},
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
    """Reads of the inbox, and a change committed when no other write goes with it."""

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
        items first, then chats whose lease was never released -- a process that stopped after
        the chat's last item but before its title and the release. (A chat held by a live
        process is among them; its runner gives way.)"""
        def read(conn: Connection) -> list[str]:
            params = {"world_key": world}
            queued = [str(r.chat_id) for r in conn.execute(CHATS_WITH_WORK, params)]
            seen = set(queued)
            return queued + [str(r.chat_id) for r in conn.execute(_LEASED, params) if r.chat_id not in seen]

        return await self._storage.in_transaction(read, write=False)

    async def queued_chats(self, world: str) -> set[str]:
        """The chats of the world with items in their inboxes (one read for many waiters)."""
        def read(conn: Connection) -> set[str]:
            return {str(r.chat_id) for r in conn.execute(CHATS_WITH_WORK, {"world_key": world})}

        return await self._storage.in_transaction(read, write=False)

    async def items(self, world: str, chat_id: str | None = None) -> list[QueuedWork]:
        """Every queued item (of one chat), in order: for inspection and tests."""
        if chat_id is None:
            query, params = _OF_WORLD, {"world_key": world}
        else:
            query, params = _OF_ONE_CHAT, {"world_key": world, "chat_key": chat_id}

        def read(conn: Connection) -> list[QueuedWork]:
            return [
                QueuedWork(int(r.item_id), str(r.chat_id), WORK_ITEM.validate_python(r.work))
                for r in conn.execute(query, params)
            ]

        return await self._storage.in_transaction(read, write=False)
