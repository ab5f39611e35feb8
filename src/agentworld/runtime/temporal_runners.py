"""A world's chats run by Temporal workers: what a process that is not a worker does (SPEC S1).

The same surface as ``runners.ChatRunners``, so ``WorldRuntime`` needs no other change: the
work itself is committed here exactly as without Temporal (a message with its route queued, an
approval's answer with its ``run_approved`` item), and ``start`` wakes the chat's workflow
(signal-with-start: one workflow per chat, started when none runs). Waiting for a chat looks
at its inbox, as a process does for a chat another process runs; every chat waited for in this
process is answered by one shared read of the world's inboxes. A person who stops or cuts a
chat first holds its workflow (``ChatWorkflow.hold``: the running drain cancelled, its tool
killed and lease released), then takes the lease as without Temporal, then lets the workflow go.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from datetime import timedelta

from temporalio.client import (
    Client,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError

from agentworld.errors import StorageError
from agentworld.models.work import QueuedWork
from agentworld.runtime.chat_workflow import ChatRef, ChatWorkflow
from agentworld.runtime.engine import TemporalSettings, workflow_id
from agentworld.runtime.runners import LEASE_SECONDS
from agentworld.storage.leases import runtime_identity
from agentworld.storage.sql import SQLStorage

logger = logging.getLogger("agentworld.runtime")

HOLD_SECONDS = 120.0
"""How long a hold keeps the chat's workflow from draining if its caller never releases it."""
HOLD_TIMEOUT = 45.0
"""How long a hold waits for the workflow to answer (no worker running: it never would)."""

LOOK_EVERY = 0.1
"""Seconds between two looks at the inboxes of the chats this process waits for."""

_clients: dict[tuple[str, str, int], Client] = {}


async def connect(settings: TemporalSettings) -> Client:
    """This event loop's client of the deployment's Temporal service (one per loop)."""
    key = (settings.address, settings.namespace, id(asyncio.get_running_loop()))
    client = _clients.get(key)
    if client is None:
        try:
            client = await Client.connect(settings.address, namespace=settings.namespace)
        except Exception as exc:
            raise StorageError(f"cannot reach Temporal at {settings.address}: {exc}") from exc
        _clients[key] = client
    return client


class TemporalRunners:
    """This process's view of the chats of one world that Temporal workers run."""

    runs_here = False
    """A post claims no lease: the chat's workflow runs it, never this process."""

    def __init__(self, storage: SQLStorage, world: str, settings: TemporalSettings) -> None:
        self._storage = storage
        self._world = world
        self._settings = settings
        self._owner = runtime_identity()
        self._starts: dict[str, asyncio.Task[None]] = {}
        self._failed: dict[str, BaseException] = {}
        self._closed = False
        self._look: asyncio.Future[set[str]] | None = None
        """The world's next shared look at its inboxes, awaited by every waiting chat."""
        self._looker: asyncio.Task[None] | None = None
        self._lookers = 0

    @property
    def owner(self) -> str:
        return self._owner

    def start(self, chat_id: str) -> None:
        """Wake the chat's workflow (started if none runs); returns at once."""
        if self._closed:
            return
        running = self._starts.get(chat_id)
        if running is not None and not running.done():
            running.add_done_callback(lambda _t: self.start(chat_id))
            return
        task = asyncio.create_task(self._wake(chat_id), name=f"wake:{chat_id}")
        self._starts[chat_id] = task

    def start_claimed(self, chat_id: str, first: QueuedWork | None) -> None:
        self.start(chat_id)

    async def _wake(self, chat_id: str) -> None:
        try:
            client = await connect(self._settings)
            queue = (await self._storage.get_world(self._world)).worker_queue or self._settings.task_queue
            await client.start_workflow(
                ChatWorkflow.run,
                ChatRef(self._world, chat_id, queue),
                id=workflow_id(self._world, chat_id),
                task_queue=self._settings.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                start_signal="wake",
            )
            self._failed.pop(chat_id, None)
        except Exception as exc:
            logger.error("could not wake the workflow of chat %s: %s", chat_id, exc)
            self._failed[chat_id] = exc

    def is_running(self, chat_id: str | None = None) -> bool:
        return False  # workers run the chats, never this process

    async def wait_idle(self, chat_id: str | None = None) -> None:
        """Until the chat's inbox is empty (the workers do its work); without a chat at once.
        After a first look of its own, a waiter takes part in the world's shared looks
        (``_look``): one read answers every chat waited for in this process."""
        if chat_id is None:
            return
        busy = await self._storage.inbox.has_work(self._world, chat_id)
        while True:
            task = self._starts.get(chat_id)
            if task is not None:
                await asyncio.shield(task)
            if (failed := self._failed.get(chat_id)) is not None:
                raise StorageError(str(failed)) from failed
            if not busy:
                return
            busy = chat_id in await self._next_look()

    async def _next_look(self) -> set[str]:
        """The chats with queued work at the world's next shared look."""
        if self._look is None or self._look.done():
            self._look = asyncio.get_running_loop().create_future()
        look = self._look
        if self._looker is None or self._looker.done():
            self._looker = asyncio.create_task(self._looking(), name=f"idle-looks:{self._world}")
        self._lookers += 1
        try:
            return await asyncio.shield(look)
        finally:
            self._lookers -= 1

    async def _looking(self) -> None:
        """Read which chats have work, for all waiters at once, while anyone waits."""
        while self._lookers:
            await asyncio.sleep(LOOK_EVERY)
            look, self._look = self._look, None
            if look is None or look.done():
                continue
            try:
                look.set_result(await self._storage.inbox.queued_chats(self._world))
            except Exception as exc:
                look.set_exception(exc)
                look.exception()  # the waiters have it; not "never retrieved" if they gave up

    @contextlib.asynccontextmanager
    async def stopped(self, chat_id: str) -> AsyncIterator[bool]:
        """Hold the chat's workflow (its drain cancelled and ended), then hold the chat's
        lease — yields False when a process not run by Temporal holds it — and afterwards
        release both and wake the workflow for work that came meanwhile."""
        token = secrets.token_hex(8)
        await self._hold(chat_id, token)
        leases = self._storage.leases
        held = False
        try:
            held = await leases.claim(self._world, chat_id, self._owner, ttl=LEASE_SECONDS)
            yield held
        finally:
            if held:
                await leases.release(self._world, chat_id, self._owner)
            await self._release(chat_id, token)

    async def _hold(self, chat_id: str, token: str) -> None:
        client = await connect(self._settings)
        handle = client.get_workflow_handle(workflow_id(self._world, chat_id))
        try:
            async with asyncio.timeout(HOLD_TIMEOUT):
                await handle.execute_update(
                    ChatWorkflow.hold, args=(token, HOLD_SECONDS), rpc_timeout=timedelta(seconds=HOLD_TIMEOUT)
                )
        except (RPCError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError, TimeoutError) as exc:
            # No run of the workflow (nothing to stop), or no worker answering: nothing drains
            # (a worker still ending its drain keeps the lease: the claim below says so).
            logger.debug("hold of chat %s: %s", chat_id, exc)

    async def _release(self, chat_id: str, token: str) -> None:
        client = await connect(self._settings)
        handle = client.get_workflow_handle(workflow_id(self._world, chat_id))
        with contextlib.suppress(RPCError):
            await handle.signal(ChatWorkflow.release, token)
        if await self._storage.inbox.has_work(self._world, chat_id):
            self.start(chat_id)

    async def aclose(self) -> None:
        """Let the wakes already sent finish (a send that returned has its workflow woken)."""
        self._closed = True
        if self._looker is not None:
            self._looker.cancel()
        tasks = [t for t in self._starts.values() if not t.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=10)
