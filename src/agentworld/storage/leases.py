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
from collections.abc import Callable
from typing import TYPE_CHECKING

import sqlalchemy as sa

from agentworld.models.work import ChatReport, LeaseAfterStep, QueuedWork
from agentworld.storage import queries, schema
from agentworld.storage.connection import Connection
from agentworld.storage.inbox import next_item

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

_TABLE = schema.chat_leases
_bp = sa.bindparam

# Built once with bind parameters (see ``storage.queries``): a lease is read or written in
# the transaction of every posted message and every finished item.
_KEY = sa.and_(_TABLE.c.world == _bp("world_key"), _TABLE.c.chat_id == _bp("chat_key"))
_MINE = sa.and_(_KEY, _TABLE.c.owner == _bp("owner_key"))
_READ = sa.select(_TABLE.c.owner, _TABLE.c.expires_at).where(_KEY)
_HOLDER = sa.select(_TABLE.c.owner).where(_KEY)
_TAKE_OVER = (
    sa.update(_TABLE)
    .where(_MINE, _TABLE.c.expires_at == _bp("expires_key"))
    .values(owner=_bp("new_owner"), expires_at=_bp("new_expiry"))
)
_RENEW = sa.update(_TABLE).where(_MINE).values(expires_at=_bp("new_expiry"))
_OWNER_IN_WORLD = sa.and_(_TABLE.c.world == _bp("world_key"), _TABLE.c.owner == _bp("owner_key"))
_RENEW_ALL = sa.update(_TABLE).where(_OWNER_IN_WORLD).values(expires_at=_bp("new_expiry"))
_HELD_BY = sa.select(_TABLE.c.chat_id).where(_OWNER_IN_WORLD)
_RELEASE = sa.delete(_TABLE).where(_MINE)
_OF_WORLD = sa.select(_TABLE.c.chat_id, _TABLE.c.owner, _TABLE.c.expires_at).where(
    _TABLE.c.world == _bp("world_key")
)
_RELEASE_IF_IDLE = sa.text(
    "DELETE FROM chat_leases WHERE world = :world_key AND chat_id = :chat_key"
    " AND owner = :owner_key AND NOT EXISTS (SELECT 1 FROM chat_inbox"
    " WHERE chat_inbox.world = :world_key AND chat_inbox.chat_id = :chat_key)"
)
"""Let the chat go if it is ``owner``'s and its inbox is empty: the end of nearly every turn,
one statement instead of reading the holder and the next item first."""


_CLAIM_IF_FREE = sa.text(
    "INSERT INTO chat_leases (world, chat_id, owner, expires_at)"
    " VALUES (:world, :chat_id, :owner, :expires_at) ON CONFLICT DO NOTHING"
)
"""Two processes claiming a free chat at once both try to insert; one row wins, the other
claims nothing. SQL text (both databases say ``ON CONFLICT DO NOTHING``), as the other
statements every turn runs (``storage.queries``): run as written on SQLite."""


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
        self,
        world: str,
        chat_id: str,
        owner: str,
        *,
        title: str | None = None,
        report_after: int | None = None,
    ) -> LeaseAfterStep:
        """Let the chat go if its inbox is empty, else hand back its next item — one
        transaction, so work queued by another process is never stranded: ``held`` with the
        ``next`` item while there is work, else let go (``released``, or not ``owner``'s any
        more). ``title``: the chat's title, found after its first exchange, recorded in the
        same transaction. ``report_after``: once let go, also read the chat's transcript after
        that position and its waiting approvals (``LeaseAfterStep.report``)."""
        storage = self._storage

        def report(conn: Connection) -> ChatReport:
            assert report_after is not None
            return queries.chat_report(conn, world, chat_id, report_after, storage.writes_run)

        def write(conn: Connection) -> LeaseAfterStep:
            if title is not None:
                queries.give_title(conn, world, chat_id, title)
            return release_or_next(
                conn, world, chat_id, owner, report=None if report_after is None else report
            )

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
        return False  # held a moment ago and let go since: the next try claims it
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


def release_or_next(
    conn: Connection,
    world: str,
    chat_id: str,
    owner: str,
    *,
    report: Callable[[Connection], ChatReport] | None = None,
) -> LeaseAfterStep:
    """Inside the caller's transaction: the chat's next item while ``owner`` holds it, else
    — its inbox empty — let it go (see ``LeaseStore.release_or_next``). ``report``: read
    once the chat is let go by ``owner``, in the same transaction, for a command waiting on
    the chat (``LeaseAfterStep.report``)."""
    key = {"world_key": world, "chat_key": chat_id}
    if not conn.execute(_RELEASE_IF_IDLE, {**key, "owner_key": owner}).rowcount:
        if conn.execute(_HOLDER, key).scalar() != owner:
            return LeaseAfterStep(False, None)
        item = next_item(conn, world, chat_id)
        if item is not None:
            return LeaseAfterStep(True, item)
        conn.execute(_RELEASE, {**key, "owner_key": owner})
    return LeaseAfterStep(False, None, released=True, report=report(conn) if report else None)
