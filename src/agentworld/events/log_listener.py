"""Wake-ups from PostgreSQL: the event feeds of this process ``LISTEN`` for the log's
notifications, so an event stored by another process reaches them as it commits.

Every write to a world's event log on PostgreSQL queues ``pg_notify`` on the world's channel
in its own transaction (``storage/event_log.py``: ``lock_world_log``, ``log_channel``); it is
delivered at commit. One dedicated asyncpg connection per process — not one of the storage
pool's, whose connections come and go — listens on the channels of the worlds that have
followers, and wakes their feeds, which then read the log after their last position. A
notification only says "read now": what was stored always comes from the log, so a
notification lost, doubled or shared by two worlds costs a read, never an event.

If the connection fails or is cut, ``listening`` turns false and every feed is woken, so it
reads at once and goes back to polling often; the listener reconnects in the background, and
listens again on every channel, and wakes every feed once more (whatever committed in between
is read then).

The same connection listens on the live channel of each world whose chunks a follower wants
(``watch_live``: ``storage/live_notes.py``): the token chunks that the process making a model
call relays (``events/live_relay.py``), handed over as documents. Those this process sent
itself are skipped: its followers have them from its own bus.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Callable
from typing import Any

import asyncpg
import sqlalchemy as sa

from agentworld.storage.event_log import log_channel
from agentworld.storage.faults import connect_options, unavailable
from agentworld.storage.live_notes import is_own, live_channel, read_payload, sender

logger = logging.getLogger("agentworld.server")

Wake = Callable[[], None]
OnChunks = Callable[[list[dict[str, Any]]], None]

APPLICATION_NAME = "agentworld-event-listener"
"""Shown in ``pg_stat_activity``, so an operator can tell the listening connection apart."""


def connect_args(url: str) -> dict[str, Any]:
    """asyncpg's ``connect`` arguments for a storage URL (``postgresql+asyncpg://…``), as
    SQLAlchemy's own asyncpg dialect reads it (host, port, user, password, database, and query
    options such as ``ssl``), with the storage's timeouts (``faults.connect_options``);
    options only SQLAlchemy understands are left out."""
    stripped, timeouts = connect_options(url)
    parsed = sa.make_url(stripped).set(drivername="postgresql+asyncpg")
    _args, options = parsed.get_dialect()().create_connect_args(parsed)
    accepted = inspect.signature(asyncpg.connect).parameters
    return {**{key: value for key, value in options.items() if key in accepted}, **timeouts}


class LogListener:
    """One ``LISTEN`` connection for this process, shared by the feeds of every followed world.

    ``start`` connects (or keeps trying, in the background); ``watch`` / ``unwatch`` add and
    remove a world's wake-up; ``aclose`` ends the connection and the task that keeps it.
    """

    def __init__(self, url: str, *, retry_seconds: float = 1.0) -> None:
        self._url = url
        self._connect_args = connect_args(url)
        """With the storage's connect timeout: the first follower of a world waits for this
        connection; without it the feeds poll."""
        self._retry = retry_seconds
        self._wakes: dict[str, set[Wake]] = {}
        """By channel: the wake-ups of the feeds following the worlds of that channel."""
        self._live: dict[str, set[OnChunks]] = {}
        """By live channel: who takes the chunks other processes relay for those worlds."""
        self._conn: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()
        """One statement at a time on the connection (asyncpg refuses overlapping ones)."""
        self._lost = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def listening(self) -> bool:
        """Whether notifications can arrive now; when false, feeds poll often instead."""
        return self._conn is not None and not self._conn.is_closed()

    async def start(self) -> None:
        """Connect now if the database answers, and keep the connection up from then on."""
        try:
            await self._connect()
        except Exception as exc:  # the feeds poll until the background task connects
            logger.warning("event log listener cannot connect (polling meanwhile): %s",
                           self._reason(exc))
        self._task = asyncio.create_task(self._keep_connected(), name="event-log-listener")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.remove_termination_listener(self._on_lost)
            with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                await conn.close(timeout=5)

    async def watch(self, world: str, wake: Wake) -> None:
        """Call ``wake`` whenever a write to ``world``'s log commits, from now on (the
        ``LISTEN`` has taken effect when this returns, so a feed that reads its head after it
        misses nothing)."""
        await self._add(self._wakes, log_channel(world), wake)

    async def unwatch(self, world: str, wake: Wake) -> None:
        await self._remove(self._wakes, log_channel(world), wake)

    async def watch_live(self, world: str, on_chunks: OnChunks) -> None:
        """Call ``on_chunks`` with the chunk documents other processes relay for ``world``
        (in the order each sender sent them), from now on."""
        await self._add(self._live, live_channel(world), on_chunks)

    async def unwatch_live(self, world: str, on_chunks: OnChunks) -> None:
        await self._remove(self._live, live_channel(world), on_chunks)

    async def _add(self, table: dict[str, set[Any]], channel: str, callback: Any) -> None:
        async with self._lock:
            callbacks = table.setdefault(channel, set())
            callbacks.add(callback)
            if len(callbacks) == 1 and self.listening:
                assert self._conn is not None
                try:
                    await self._conn.add_listener(channel, self._on_notification)
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                    self._drop(exc)

    async def _remove(self, table: dict[str, set[Any]], channel: str, callback: Any) -> None:
        async with self._lock:
            callbacks = table.get(channel, set())
            callbacks.discard(callback)
            if callbacks:
                return
            table.pop(channel, None)
            if self.listening:
                assert self._conn is not None
                try:
                    await self._conn.remove_listener(channel, self._on_notification)
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                    self._drop(exc)

    # -- the connection --------------------------------------------------------------------

    async def _keep_connected(self) -> None:
        failures = 0
        while True:
            await self._lost.wait()
            await asyncio.sleep(self._retry)
            try:
                await self._connect()
            except Exception as exc:  # whatever it is, keep trying: the feeds poll meanwhile
                failures += 1
                if failures == 1:  # said once an outage, not every second of it
                    logger.warning("event log listener cannot connect (polling meanwhile): %s",
                                   self._reason(exc))
                continue
            if failures:
                logger.warning("event log listener listens again")
                failures = 0

    def _reason(self, exc: BaseException) -> str:
        """``exc`` in one line naming the server, as storage says it."""
        return str(unavailable(exc, self._url) or exc) or type(exc).__name__

    async def _connect(self) -> None:
        """Connect, listen on every watched channel, then wake every feed: events committed
        while nobody listened are read now rather than at the next poll."""
        self._lost.clear()
        try:
            conn = await asyncpg.connect(**self._options())
        except BaseException:
            self._lost.set()
            raise
        async with self._lock:
            try:
                for channel in [*self._wakes, *self._live]:
                    await conn.add_listener(channel, self._on_notification)
            except BaseException:
                self._lost.set()
                conn.terminate()
                raise
            conn.add_termination_listener(self._on_lost)
            self._conn = conn
        self._wake_all()

    def _options(self) -> dict[str, Any]:
        """The URL's options, with our name unless the URL sets its own."""
        options: dict[str, Any] = dict(self._connect_args)
        settings = options.get("server_settings") or {}
        options["server_settings"] = {"application_name": APPLICATION_NAME, **settings}
        return options

    def _drop(self, exc: BaseException) -> None:
        logger.warning("event log listener lost its connection (polling meanwhile): %s", exc)
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.remove_termination_listener(self._on_lost)
            conn.terminate()
        self._lost.set()
        self._wake_all()

    def _on_lost(self, conn: asyncpg.Connection) -> None:
        """asyncpg saw the connection close (the server went away, the backend was ended)."""
        if conn is self._conn:
            self._drop(ConnectionError("the connection was closed"))

    def _on_notification(
        self, _conn: asyncpg.Connection, _pid: int, channel: str, payload: str
    ) -> None:
        for wake in tuple(self._wakes.get(channel, ())):
            wake()
        takers = self._live.get(channel)
        if not takers or is_own(payload):
            return
        read = read_payload(payload)
        if read is None or read[0] == sender() or not read[1]:
            return  # not chunks, or this process's own (its followers have them from its bus)
        for on_chunks in tuple(takers):
            try:
                on_chunks(read[1])
            except Exception:  # one taker's fault must not keep the chunks from the others
                logger.exception("a taker of live chunks failed")

    def _wake_all(self) -> None:
        for wakes in tuple(self._wakes.values()):
            for wake in tuple(wakes):
                wake()
