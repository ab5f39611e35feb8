"""Chat leases: one process at a time runs a chat's work, across processes and hosts.

A process claims a chat before doing its work and renews the claim while it works.
The claim names its owner as ``host:pid:start:runtime`` (``start``: when the process
started, so a recycled pid is not mistaken for the owner; ``runtime``: which of the
process's world runtimes, so two opened on one database in one process never both run a
chat). Another process takes a chat over
at once when its owner is provably gone (same host, process gone) and otherwise only
when the claim has lapsed. Every change is a conditional write inside one
transaction — SQLite serialises write transactions, PostgreSQL's row update is a
compare-and-set on the owner read — so two processes never both hold a chat.
"""

from __future__ import annotations

import functools
import os
import secrets
import socket
import time
from typing import TYPE_CHECKING

from agentworld.models.work import QueuedWork
from agentworld.storage import queries
from agentworld.storage.connection import Connection
from agentworld.storage.inbox import next_item
from agentworld.storage.statement import Sql

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

# Module constants: a lease is read or written in the transaction of every posted message and
# every finished item.
_KEY = "chat_leases.world = :world_key AND chat_leases.chat_id = :chat_key"
_MINE = f"{_KEY} AND chat_leases.owner = :owner_key"
_OWNER_IN_WORLD = "chat_leases.world = :world_key AND chat_leases.owner = :owner_key"
_READ = Sql(f"SELECT chat_leases.owner, chat_leases.expires_at FROM chat_leases WHERE {_KEY}")
_HOLDER = Sql(f"SELECT chat_leases.owner FROM chat_leases WHERE {_KEY}")
_TAKE_OVER = Sql(
    "UPDATE chat_leases SET owner = :new_owner, expires_at = :new_expiry"
    f" WHERE {_MINE} AND chat_leases.expires_at = :expires_key"
)
"""Take the claim over from the owner and expiry just read: a compare-and-set, so of two
processes taking over one lapsed claim at once, one changes the row."""
_RENEW = Sql(f"UPDATE chat_leases SET expires_at = :new_expiry WHERE {_MINE}")
_RENEW_ALL = Sql(f"UPDATE chat_leases SET expires_at = :new_expiry WHERE {_OWNER_IN_WORLD}")
_HELD_BY = Sql(f"SELECT chat_leases.chat_id FROM chat_leases WHERE {_OWNER_IN_WORLD}")
_RELEASE = Sql(f"DELETE FROM chat_leases WHERE {_MINE}")
_OF_WORLD = Sql(
    "SELECT chat_leases.chat_id, chat_leases.owner, chat_leases.expires_at FROM chat_leases"
    " WHERE chat_leases.world = :world_key"
)
_RELEASE_IF_IDLE = Sql(
    f"DELETE FROM chat_leases WHERE {_MINE} AND NOT EXISTS (SELECT 1 FROM chat_inbox"
    " WHERE chat_inbox.world = :world_key AND chat_inbox.chat_id = :chat_key)"
)
"""Release the chat's lease if it is ``owner``'s and its inbox is empty: the end of nearly
every turn, one statement instead of reading the holder and the next item first."""


_CLAIM_IF_FREE = Sql(
    "INSERT INTO chat_leases (world, chat_id, owner, expires_at)"
    " VALUES (:world, :chat_id, :owner, :expires_at) ON CONFLICT DO NOTHING"
)
"""Two processes claiming a free chat at once both try to insert; one row wins, the other
claims nothing (both databases say ``ON CONFLICT DO NOTHING``)."""


def _start_ticks(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (Linux), or None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: fields restart after ")".
    fields = text[text.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


@functools.cache
def process_identity() -> str:
    """This process: ``host:pid:start``."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid) or '0'}"


def runtime_identity() -> str:
    """A new lease owner in this process: ``host:pid:start:token``."""
    return f"{process_identity()}:{secrets.token_hex(4)}"


def owner_gone(owner: str) -> bool:
    """Whether the process named by ``owner`` has provably stopped.

    Only a process on this host can be checked; one elsewhere is assumed alive (its claim
    is taken over when it lapses instead)."""
    host, pid_text, start, *_runtime = [*owner.split(":"), "", ""][:4]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # a process of another user holds that pid: compare start times below
    now_start = _start_ticks(pid)
    return now_start is not None and start not in ("", "0") and now_start != start


class LeaseStore:
    def __init__(self, storage: StorageCore) -> None:
        self._storage = storage

    async def claim(self, world: str, chat_id: str, owner: str, *, ttl: float) -> bool:
        """Claim (or renew) the chat for ``owner``; false while another live owner holds it."""

        def write(conn: Connection) -> bool:
            return claim_lease(conn, world, chat_id, owner, ttl)

        return await self._storage.in_transaction(write, write=True)

    async def claim_next(
        self, world: str, chat_id: str, owner: str, *, ttl: float
    ) -> tuple[bool, QueuedWork | None]:
        """``claim``, and the chat's next item, in one transaction: (claimed, next item)."""

        def write(conn: Connection) -> tuple[bool, QueuedWork | None]:
            if not claim_lease(conn, world, chat_id, owner, ttl):
                return False, None
            return True, next_item(conn, world, chat_id)

        return await self._storage.in_transaction(write, write=True)

    async def renew(self, world: str, chat_id: str, owner: str, *, ttl: float) -> bool:
        """Extend ``owner``'s claim; false when it no longer holds the chat."""
        params = {"world_key": world, "chat_key": chat_id, "owner_key": owner}

        def write(conn: Connection) -> bool:
            renewed = conn.execute(_RENEW, {**params, "new_expiry": time.time() + ttl})
            return bool(renewed.rowcount)

        return await self._storage.in_transaction(write, write=True)

    async def renew_all(self, world: str, owner: str, *, ttl: float) -> set[str]:
        """Extend every claim ``owner`` holds in ``world``; return the chats it still holds."""
        params = {"world_key": world, "owner_key": owner}

        def write(conn: Connection) -> set[str]:
            conn.execute(_RENEW_ALL, {**params, "new_expiry": time.time() + ttl})
            return {str(r.chat_id) for r in conn.execute(_HELD_BY, params)}

        return await self._storage.in_transaction(write, write=True)

    async def release_or_next(
        self, world: str, chat_id: str, owner: str, *, title: str | None = None
    ) -> QueuedWork | None:
        """Release the chat's lease if its inbox is empty, else hand back its next item — one
        transaction, so work queued by another process is never stranded. None: the lease is
        released (or was not ``owner``'s any more). ``title``: the chat's title, found after
        its first exchange, recorded in the same transaction."""

        def write(conn: Connection) -> QueuedWork | None:
            if title is not None:
                queries.give_title(conn, world, chat_id, title)
            return release_or_next(conn, world, chat_id, owner)

        return await self._storage.in_transaction(write, write=True)

    async def release(self, world: str, chat_id: str, owner: str) -> None:
        params = {"world_key": world, "chat_key": chat_id, "owner_key": owner}

        def write(conn: Connection) -> None:
            conn.execute(_RELEASE, params)

        await self._storage.in_transaction(write, write=True)

    async def holder(self, world: str, chat_id: str) -> str | None:
        """Who holds the chat now (None: nobody), whether or not the claim has lapsed."""
        params = {"world_key": world, "chat_key": chat_id}

        def read(conn: Connection) -> str | None:
            return conn.execute(_HOLDER, params).scalar()

        return await self._storage.in_transaction(read, write=False)


def claim_lease(conn: Connection, world: str, chat_id: str, owner: str, ttl: float) -> bool:
    """Claim (or renew) the chat for ``owner`` inside the caller's transaction."""
    key = {"world_key": world, "chat_key": chat_id}
    now = time.time()
    fresh = {"world": world, "chat_id": chat_id, "owner": owner, "expires_at": now + ttl}
    if conn.execute(_CLAIM_IF_FREE, fresh).rowcount:
        return True  # the chat was free (the usual case: one statement)
    row = conn.execute(_READ, key).first()
    if row is None:
        return False  # held a moment ago and released since: the next try claims it
    if row.owner != owner and row.expires_at > now and not owner_gone(row.owner):
        return False
    taken = conn.execute(
        _TAKE_OVER,
        {
            **key,
            "owner_key": row.owner,
            "expires_key": row.expires_at,
            "new_owner": owner,
            "new_expiry": now + ttl,
        },
    )
    return bool(taken.rowcount)


def chats_in_use(conn: Connection, world: str) -> list[str]:
    """Inside the caller's transaction: the world's chats that some process is running now
    (a claim neither lapsed nor left by a process that is provably gone), by chat id."""
    now = time.time()
    rows = conn.execute(_OF_WORLD, {"world_key": world})
    return sorted(r.chat_id for r in rows if r.expires_at > now and not owner_gone(r.owner))


def release_or_next(conn: Connection, world: str, chat_id: str, owner: str) -> QueuedWork | None:
    """Inside the caller's transaction: the chat's next item while ``owner`` holds it, else
    — its inbox empty — release the lease (see ``LeaseStore.release_or_next``)."""
    key = {"world_key": world, "chat_key": chat_id}
    if conn.execute(_RELEASE_IF_IDLE, {**key, "owner_key": owner}).rowcount:
        return None
    if conn.execute(_HOLDER, key).scalar() != owner:
        return None
    item = next_item(conn, world, chat_id)
    if item is None:
        conn.execute(_RELEASE, {**key, "owner_key": owner})
    return item


def hold_while(conn: Connection, world: str, chat_id: str, owner: str) -> tuple[str | None, bool]:
    """Inside the caller's transaction: keep every other process from running the chat until
    it ends. Claims the lease for ``owner`` (a write, so a process claiming it at the same time
    waits for this transaction, then finds what it left); returns the live holder that is not
    ``owner`` when there is one (nothing claimed), and whether ``owner`` held the lease before
    (else the caller lets go of it with ``release_lease`` before it commits)."""
    row = conn.execute(_READ, {"world_key": world, "chat_key": chat_id}).first()
    if row is not None and row.owner == owner:
        return None, True
    if not claim_lease(conn, world, chat_id, owner, _MOMENT):
        holder = conn.execute(_HOLDER, {"world_key": world, "chat_key": chat_id}).scalar()
        return str(holder or "another process"), False
    return None, False


_MOMENT = 60.0
"""How long a claim made for one transaction would hold if it were never let go."""


def release_lease(conn: Connection, world: str, chat_id: str, owner: str) -> None:
    """Inside the caller's transaction: let go of ``owner``'s lease of the chat."""
    conn.execute(_RELEASE, {"world_key": world, "chat_key": chat_id, "owner_key": owner})
