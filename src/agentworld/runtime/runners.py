"""One runner per chat, across processes: claim the chat, do its inbox in order, release it.

A chat's work lives in its persisted inbox (``models.work``). To do it, a process
claims the chat's lease (``storage.leases``), renews it while it works, takes the
items one at a time in order, and releases the lease when the inbox is empty. A
process that finds the chat claimed by another live process leaves the work to it
and only waits: its ``wait_idle`` polls the inbox and tries the lease again, so
work is never stranded — if the holder dies, the next try takes the chat over
(at once on this host, after the lease lapses elsewhere) and finishes what it left.

Inside one process the chats run concurrently, each with at most one task, and
waiting for a chat this process runs costs no polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from agentworld.errors import StorageUnavailable
from agentworld.models.work import InboxChange, QueuedWork
from agentworld.runtime import step_gate
from agentworld.runtime.step_gate import StepGate, StepKind, StepReached
from agentworld.storage.leases import runtime_identity
from agentworld.storage.sql import SQLStorage

logger = logging.getLogger("agentworld.runtime")

LEASE_SECONDS = 20.0
"""How long a claim holds without renewal (another host's dead runner is taken over then)."""
RENEW_EVERY = LEASE_SECONDS / 4
STORAGE_RETRY_FIRST = 0.5
STORAGE_RETRY_MAX = 5.0
"""Seconds before an item whose database went away is taken on again (doubling up to the max)."""
POLL_SECONDS = 0.05
"""How often a process waiting on a chat another process runs looks again."""

Process = Callable[[QueuedWork], Awaitable[QueuedWork | None]]
"""Do one item; return the item that now stands in its place when it is to be done next."""
OnError = Callable[[QueuedWork, Exception], Awaitable[None]]


class ChatRunners:
    """This process's runners for the chats of one world."""

    def __init__(
        self,
        storage: SQLStorage,
        world: str,
        process: Process,
        *,
        on_error: OnError,
        on_claimed: Callable[[str], None] | None = None,
        on_drained: Callable[[str], Awaitable[str | None]] | None = None,
        serve_only: bool = False,
    ) -> None:
        self._storage = storage
        self._world = world
        self._process = process
        self._on_error = on_error
        self._on_claimed = on_claimed
        self._on_drained = on_drained
        self._owner = runtime_identity()
        self._tasks: dict[str, asyncio.Task[bool]] = {}
        self._idle = asyncio.Event()
        """Set while this process runs no chat (``_tasks`` is empty)."""
        self._idle.set()
        self._held: set[str] = set()
        """Chats whose lease this process holds."""
        self._renewer: asyncio.Task[None] | None = None
        self._more_work: set[str] = set()
        """Chats given new work while their runner was finishing: it looks again."""
        self._closed = False
        self._stopping: set[str] = set()
        """Chats whose work a person is stopping: no runner starts for them meanwhile."""
        self._reached: dict[str, StepKind] = {}
        """Chats whose work stopped at a call their drain's step gate did not let through."""
        self._serving: set[str] | None = set() if serve_only else None
        """In a Temporal worker: the only chats a runner may start for (those ``drain`` was
        asked to run, by their workflows); None: any chat."""

    runs_here = True
    """A post may claim the chat's lease for this process (``WorldRuntime.post``)."""

    def start(self, chat_id: str) -> None:
        """Make sure the chat's work gets done: start this process's runner for it if none
        is running (it gives way at once if another process holds the chat)."""
        if self._closed or chat_id in self._stopping:
            return
        if self._serving is not None and chat_id not in self._serving:
            return
        running = self._tasks.get(chat_id)
        if running is not None and not running.done():
            self._more_work.add(chat_id)
            return
        self._start_task(chat_id, self._run(chat_id))

    def _start_task(self, chat_id: str, run: Coroutine[Any, Any, bool]) -> None:
        task = asyncio.create_task(run, name=f"chat:{chat_id}")
        self._tasks[chat_id] = task
        self._idle.clear()
        task.add_done_callback(functools.partial(self._forget, chat_id))

    def _forget(self, chat_id: str, task: asyncio.Task[bool]) -> None:
        if self._tasks.get(chat_id) is task:  # a later runner of the chat may have replaced it
            del self._tasks[chat_id]
            if not self._tasks:
                self._idle.set()
        if not task.cancelled() and (exc := task.exception()) is not None:
            # A runner ends with an error only when storage failed under it (an item's own
            # failure is reported and dropped, ``_fail``): said once, not as a stray traceback.
            logger.error("chat %s stopped running: %s", chat_id, exc)
            logger.debug("chat %s stopped running", chat_id, exc_info=exc)

    @contextlib.asynccontextmanager
    async def stopped(self, chat_id: str) -> AsyncIterator[bool]:
        """Cancel this process's runner for the chat, wait until it has ended (its running
        tool killed, its lease released), then hold the chat's lease — yields False, holding
        nothing, when another process runs the chat — and start no runner while the caller
        closes the chat's work; afterwards the lease is released, and the chat runs again if
        new work came meanwhile."""
        self._stopping.add(chat_id)
        leases = self._storage.leases
        held = False
        try:
            task = self._tasks.get(chat_id)
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            held = await leases.claim(self._world, chat_id, self._owner, ttl=LEASE_SECONDS)
            yield held
        finally:
            self._stopping.discard(chat_id)
            self._more_work.discard(chat_id)
            if held:
                await leases.release(self._world, chat_id, self._owner)
        self.start(chat_id)

    async def drain(self, chat_id: str, gate: StepGate | None = None) -> StepKind | None:
        """Run the chat here until its inbox is empty (a Temporal worker's activity) — or,
        under ``gate``, until the model or tool call the gate stops: its kind is returned, its
        item left first in the inbox, the lease released. When the caller is cancelled, the
        runner is cancelled and has ended (its tool killed, its lease released) before this
        returns."""
        if self._serving is not None:
            self._serving.add(chat_id)
        self._reached.pop(chat_id, None)
        token = step_gate.GATE.set(gate)  # the runner's task takes this context with it
        try:
            self.start(chat_id)
            await self.wait_idle(chat_id)
            return self._reached.pop(chat_id, None)
        except BaseException:
            task = self._tasks.get(chat_id)
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            step_gate.GATE.reset(token)
            if self._serving is not None:
                self._serving.discard(chat_id)

    def is_running(self, chat_id: str | None = None) -> bool:
        return bool(self._tasks) if chat_id is None else chat_id in self._tasks

    async def wait_idle(self, chat_id: str | None = None) -> None:
        """Until the chat's inbox is empty (whoever runs it), or — without a chat — until
        this process runs no chat. Pending approvals are not work: a chat waiting for a
        person is idle."""
        if chat_id is None:
            while self._tasks:
                # One event for every waiter. Waiting on the tasks themselves cost each waiter a
                # callback on every running chat: many waiters times many chats.
                # A waiter that gives up (a timeout, a client gone) cancels nothing but its wait.
                await self._idle.wait()
            return
        task = self._tasks.get(chat_id)
        while True:
            if task is not None:
                await _until_done(task)
                ran = None if task.cancelled() or task.exception() else task.result()
                if ran is True:
                    return  # this process released the chat because its inbox was empty
            if not await self._storage.inbox.has_work(self._world, chat_id):
                return
            if task is not None or chat_id in self._stopping:
                await asyncio.sleep(POLL_SECONDS)  # another process runs the chat: look again
            self.start(chat_id)
            task = self._tasks.get(chat_id)
            if task is None and chat_id not in self._stopping:  # closed
                return

    @property
    def owner(self) -> str:
        """This runtime as a lease owner (for writes that claim a chat as they post into it)."""
        return self._owner

    def start_claimed(self, chat_id: str, first: QueuedWork | None) -> None:
        """Run a chat whose lease the caller's own write just claimed for this runtime, from
        ``first`` (its next item, read in that write) — no claim of its own needed."""
        running = self._tasks.get(chat_id)
        if self._closed or (running is not None and not running.done()):
            self.start(chat_id)  # the runner at work sees the new item before it releases the chat
            return
        self._start_task(chat_id, self._run(chat_id, claimed=(first,)))

    async def _run(self, chat_id: str, *, claimed: tuple[QueuedWork | None] | None = None) -> bool:
        """Run the chat while this process can claim it; False if another process holds it.
        ``claimed``: the lease is held already, and this is the chat's next item."""
        leases = self._storage.leases
        while True:
            if claimed is not None:
                (item,), claimed = claimed, None
            else:
                held_now, item = await leases.claim_next(
                    self._world, chat_id, self._owner, ttl=LEASE_SECONDS
                )
                if not held_now:
                    return False
            self._held.add(chat_id)
            self._ensure_renewer()
            if self._on_claimed is not None:
                self._on_claimed(chat_id)
            try:
                while True:
                    if await self._drain(item):
                        # Stopped before a call this activity does not make: the next one does.
                        await leases.release(self._world, chat_id, self._owner)
                        break
                    title = None
                    if self._on_drained is not None:
                        try:
                            title = await self._on_drained(chat_id)
                        except Exception:
                            logger.exception("after-drain work failed for chat %s", chat_id)
                    # The next item, or — if the inbox is empty — the lease released, in one
                    # transaction (with the title the drained work found): work posted by
                    # another process meanwhile is never left waiting for a claim nobody makes.
                    item = await leases.release_or_next(self._world, chat_id, self._owner, title=title)
                    if item is None:
                        break
            except BaseException:
                # Cancelled or failed: the lease is released at once, for another process to
                # take over (the claim would lapse on its own after ``LEASE_SECONDS``).
                try:
                    await asyncio.shield(leases.release(self._world, chat_id, self._owner))
                except Exception as exc:
                    logger.warning("could not release the lease of chat %s: %s", chat_id, exc)
                raise
            finally:
                self._held.discard(chat_id)
            self._more_work.discard(chat_id)
            if chat_id not in self._more_work:
                return True

    async def _drain(self, item: QueuedWork | None) -> bool:
        """Do ``item`` and what it becomes: an item that turned into its own continuation (a
        route → the first agent's loop) is taken on at once, without asking the inbox. True
        when the work stopped at a call its step gate does not let through (``step_gate``)."""
        wait = STORAGE_RETRY_FIRST
        while item is not None:
            current = item
            try:
                item = await self._process(current)
                wait = STORAGE_RETRY_FIRST
            except StepReached as reached:
                self._reached[current.chat_id] = reached.kind
                return True
            except StorageUnavailable as exc:
                # The database stalled or restarted: the item is not the one at fault. It stays
                # in the inbox and is taken on again from what is stored, as a process that
                # stopped would have left it (a tool that had started is reported interrupted).
                logger.warning("chat %s: %s; trying again in %g s", current.chat_id, exc, wait)
                item, wait = await self._head_after(current.chat_id, wait)
            except Exception as exc:
                await self._fail(current, exc)
                item = None
        return False

    async def _head_after(self, chat_id: str, wait: float) -> tuple[QueuedWork | None, float]:
        """The chat's next item once the database answers again, waiting ``wait`` seconds
        (doubling) between tries; and the wait for the next failure."""
        while True:
            await asyncio.sleep(wait)
            wait = min(wait * 2, STORAGE_RETRY_MAX)
            try:
                return await self._storage.inbox.first(self._world, chat_id), wait
            except StorageUnavailable as exc:
                logger.warning("chat %s: %s; trying again in %g s", chat_id, exc, wait)

    async def _fail(self, item: QueuedWork, exc: Exception) -> None:
        """An item that raised is reported and dropped, so one bad item cannot stop a chat."""
        try:
            await self._on_error(item, exc)
        except Exception:
            logger.exception("error reporting failed for chat %s (original: %r)", item.chat_id, exc)
        await self._storage.inbox.change(
            self._world, InboxChange(item.chat_id, current=item.item_id, becomes=())
        )

    def _ensure_renewer(self) -> None:
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.create_task(self._renew(), name=f"leases:{self._world}")

    async def _renew(self) -> None:
        """Keep this process's claims alive — one statement for all its chats of the world —
        while it holds any; a chat whose claim was lost (this process stalled past the lease
        and another took over) stops being worked on at once."""
        while self._held:
            await asyncio.sleep(RENEW_EVERY)
            try:
                held = await self._storage.leases.renew_all(
                    self._world, self._owner, ttl=LEASE_SECONDS
                )
            except Exception:
                logger.exception("renewing the leases of world %s failed", self._world)
                continue
            for chat_id in self._held - held:
                logger.error("lost the lease of chat %s; another process runs it now", chat_id)
                task = self._tasks.get(chat_id)
                if task is not None:
                    task.cancel()

    async def aclose(self) -> None:
        """Stop: cancel this process's runners (their chats' leases are released; what they
        were doing is finished by whoever runs the chat next)."""
        self._closed = True
        tasks: list[asyncio.Task[Any]] = list(self._tasks.values())
        if self._renewer is not None:
            tasks.append(self._renewer)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _until_done(task: asyncio.Task[Any]) -> None:
    """Until ``task`` is done, without its outcome and without cancelling it when the waiter
    is cancelled: ``asyncio.wait({task})`` in a future and a callback, not the two coroutines,
    the set and the closure of that (every waiting ``send`` keeps all of them alive)."""
    if task.done():
        return
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    wake = functools.partial(_wake, waiter)
    task.add_done_callback(wake)
    try:
        await waiter
    finally:
        task.remove_done_callback(wake)


def _wake(waiter: asyncio.Future[None], _task: object) -> None:
    if not waiter.done():
        waiter.set_result(None)
