"""What a command that runs a world produced, and the waiting it takes to know.

``send``, ``approve`` and ``respond`` all do one thing to a chat, wait until that chat is idle
(or a timeout) — never for the other chats the process runs meanwhile, so a chat that hangs
cannot hold up a command about another — and report the transcript messages that appeared,
the errors seen on the way, the approvals and questions still waiting, and the calls refused without
running: ``run_and_report`` is that shape, once.

A person may stop the run they wait for (Ctrl-C, SPEC K3): a ``StopRequest`` handed to
``run_and_report`` stops the chat's turn as ``/stop`` does (``WorldRuntime.stop``) once the run
has begun, and the run reports what was produced up to there.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agentworld.approval.decisions import DenialSource
from agentworld.errors import AgentWorldError
from agentworld.models import Message
from agentworld.models.events import SystemEvent, ToolEvent, WorldEvent
from agentworld.models.pending import PendingApproval, PendingQuestion
from agentworld.storage.sql import SQLStorage

if TYPE_CHECKING:
    from agentworld.runtime.stopping import StopOutcome
    from agentworld.runtime.world import WorldRuntime

STOP_SECONDS = 10.0
"""How long a stop may take to be recorded (its runner cancelled, its tool killed, the stop
committed) before the command reports that it could not be and ends anyway: a database that
does not answer must not hold a person's Ctrl-C forever."""


@dataclass(frozen=True)
class DeniedCall:
    """A tool call refused without running while a command ran the chat."""

    agent: str
    tool_name: str
    by: DenialSource
    reason: str
    """What the model was told."""


@dataclass
class SendResult:
    """What one ``send`` produced: the chat, the new transcript messages, and errors seen."""

    chat_id: str
    messages: list[Message]
    errors: list[str] = field(default_factory=list)
    pending_approvals: list[PendingApproval] = field(default_factory=list)
    """Approval requests of the chat still waiting for a person after the run."""
    pending_questions: list[PendingQuestion] = field(default_factory=list)
    """Questions agents of the chat asked (``ask_user``) still waiting for an answer."""
    notices: list[str] = field(default_factory=list)
    """Things the person should know that are not errors: e.g. that the message reached
    nobody, and why."""
    timed_out: bool = False
    """The wait ended at its timeout: the chat still had work, which goes on (or is resumed
    by the next process that runs the world) — it is never abandoned."""
    denied: list[DeniedCall] = field(default_factory=list)
    """Tool calls of the chat refused while this process ran it: by the policy, or because
    they needed a person and nobody could be asked."""
    running: list[str] = field(default_factory=list)
    """With ``timed_out``: the tools of the chat still running in this process when the wait
    ended (their names, in start order). A command that exits then stops them with it; each
    is recorded as interrupted and never run again, since it may have had effects."""
    interrupted: bool = False
    """A person stopped the run while it was under way (``StopRequest``): the chat's turn was
    stopped, if ``stop`` says so; ``messages`` is what was produced up to there."""
    stop: StopOutcome | None = None
    """With ``interrupted``: what the stop did; None when it could not be made in time (the
    reason is in ``errors``)."""


@dataclass
class ResumeResult:
    """What ``resume`` finished: per chat that had work left, what it produced."""

    world: str
    chats: list[SendResult]
    timed_out: bool = False


class StopRequest:
    """A person's request to stop the run a command waits for (Ctrl-C, SPEC K3).

    ``run_and_report`` marks the request's run as under way just before it acts on the chat;
    from then on a request stops that chat's turn and the run returns what was produced.
    Before that nothing was stored that a stop would have to undo, so ``request`` says no and
    the caller simply ends what it was doing. Made and requested on the event loop's thread."""

    def __init__(self, *, by: str = "human") -> None:
        self.by = by
        """Who the transcript says stopped the work."""
        self.under_way = False
        self._asked = asyncio.Event()

    @property
    def asked(self) -> bool:
        return self._asked.is_set()

    def request(self) -> bool:
        """Ask the run under way to stop; False when no run is under way."""
        if not self.under_way:
            return False
        self._asked.set()
        return True

    async def wait(self) -> None:
        await self._asked.wait()


async def run_until_idle(runtime: WorldRuntime, chat: str, timeout: float | None) -> bool:
    """Wait until the chat is idle; False if ``timeout`` seconds passed first (the work goes on)."""
    try:
        async with asyncio.timeout(timeout):
            await runtime.wait_until_idle(chat)
    except TimeoutError:
        return False
    return True


class RunWatch:
    """Collects what a command must report of one chat and is not in its transcript: the
    error events, and the calls refused without running."""

    def __init__(self, runtime: WorldRuntime, chat: str) -> None:
        self.errors: list[str] = []
        self.denied: list[DeniedCall] = []
        self.running: dict[str, str] = {}
        """Tool calls started and not yet ended: call id -> tool name."""
        self.unsubscribe = runtime.bus.subscribe(
            self._collect, kinds=["system", "tool"], name="command-watch", chat=chat
        )

    def _collect(self, event: WorldEvent) -> None:
        """An event of the chat, or of no chat (the bus's ``chat`` filter)."""
        if isinstance(event, SystemEvent) and event.level == "error":
            self.errors.append(event.text)
        elif isinstance(event, ToolEvent):
            if event.phase == "start":
                self.running[event.tool_call_id] = event.tool_name
            else:
                self.running.pop(event.tool_call_id, None)
            if (by := event.detail.get("deniedBy")) is not None:
                reason = _error_text(event.detail.get("content"))
                self.denied.append(DeniedCall(event.agent, event.tool_name, by, reason))


    async def read_log(self, storage: SQLStorage, world: str, chat: str, start: int) -> None:
        """The chat's errors and refused calls since ``start`` as the event log holds them:
        the work ran in another process (a Temporal worker), whose events this process's
        bus never saw. Events of no chat count too, as on the bus (an MCP server that failed
        to start for the turn)."""
        from agentworld.storage.event_log import EventLog

        log, after = EventLog(storage), start
        while True:
            batch = await log.after(world, after)
            for logged in batch.events:
                if logged.chat_id not in (chat, None):
                    continue
                document = logged.document
                if logged.kind == "system" and document.get("level") == "error":
                    if document.get("text") not in self.errors:
                        self.errors.append(str(document.get("text")))
                elif logged.kind == "tool":
                    detail = document.get("detail") or {}
                    if (by := detail.get("deniedBy")) is not None:
                        reason = _error_text(detail.get("content"))
                        self.denied.append(
                            DeniedCall(document["agent"], document["toolName"], by, reason)
                        )
            if not batch.full:
                return
            after = batch.last_seq


def _error_text(content: object) -> str:
    """The ``error`` of a result document, else the document."""
    try:
        document = json.loads(str(content))
    except ValueError:
        return str(content)
    return str(document.get("error", content)) if isinstance(document, dict) else str(content)



async def chat_outcome(
    storage: SQLStorage,
    world: str,
    chat: str,
    start: int,
    errors: list[str],
    *,
    timed_out: bool = False,
) -> SendResult:
    """The chat's transcript messages after ``start``, its approvals and questions still
    waiting."""
    messages, approvals, questions = await storage.since_with_waiting(world, chat, start)
    return SendResult(
        chat_id=chat,
        messages=messages,
        errors=errors,
        pending_approvals=approvals,
        pending_questions=questions,
        timed_out=timed_out,
    )


@dataclass(frozen=True)
class Posting:
    """An act that posts a message: it returns the transcript position just before the
    message, so what it caused is read from there without first reading where the
    transcript stood (one trip to the database less per ``send``)."""

    post: Callable[[], Awaitable[int]]


async def run_and_report(
    storage: SQLStorage,
    runtime: WorldRuntime,
    world: str,
    chat: str,
    act: Callable[[], Awaitable[object]] | Posting,
    *,
    timeout: float | None,
    stop: StopRequest | None = None,
) -> SendResult:
    """Do ``act`` to the chat, wait until it is idle, and report what appeared — errors
    included, collected as they happen — read once, after the wait. ``stop``: a request made
    once ``act`` has begun stops the chat's turn (the act itself, one short write, is let
    finish first, so what it stored is what the stop closes)."""
    watch = RunWatch(runtime, chat)
    stopped: StopOutcome | None = None
    if stop is not None:
        stop.under_way = True
    try:
        if isinstance(act, Posting):
            start = await act.post()
        else:
            start = await storage.last_seq()
            try:
                await act()
            except AgentWorldError:
                # Refused (answered already, expired): what the runtime found on starting —
                # an expired approval's denial, whose continuation tells the model — still runs.
                if await _wait(runtime, chat, timeout, stop) == "stop":
                    await _stop(runtime, chat, stop, watch.errors)
                raise
        ended = await _wait(runtime, chat, timeout, stop)
        if ended == "stop":
            stopped = await _stop(runtime, chat, stop, watch.errors)
    finally:
        if stop is not None:
            stop.under_way = False
        watch.unsubscribe()
    finished = ended != "timeout"
    if not runtime.runs_chats_here:
        await watch.read_log(storage, world, chat, start)
    result = await chat_outcome(storage, world, chat, start, watch.errors, timed_out=not finished)
    result.denied = watch.denied
    result.interrupted, result.stop = ended == "stop", stopped
    if not finished:
        result.running = list(watch.running.values())
    return result


async def _wait(
    runtime: WorldRuntime, chat: str, timeout: float | None, stop: StopRequest | None
) -> Literal["idle", "timeout", "stop"]:
    """Until the chat is idle, ``timeout`` seconds pass, or a person asks to stop, whichever
    comes first (a stop asked before the wait began wins at once)."""
    if stop is None:
        return "idle" if await run_until_idle(runtime, chat, timeout) else "timeout"
    if stop.asked:
        return "stop"
    idle = asyncio.ensure_future(run_until_idle(runtime, chat, timeout))
    asked = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({idle, asked}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in (idle, asked):
            waiter.cancel()
        await asyncio.gather(idle, asked, return_exceptions=True)
    if stop.asked:
        return "stop"
    return "idle" if idle.result() else "timeout"


async def _stop(
    runtime: WorldRuntime, chat: str, stop: StopRequest | None, errors: list[str]
) -> StopOutcome | None:
    """Stop the chat's turn as ``/stop`` does, within ``STOP_SECONDS``; None (and why, in
    ``errors``) when the stop could not be recorded in that time."""
    assert stop is not None
    try:
        async with asyncio.timeout(STOP_SECONDS):
            return await runtime.stop(chat, by=stop.by)
    except TimeoutError:
        errors.append(
            f"the stop could not be recorded within {STOP_SECONDS:g} s (the database did not "
            "answer); the chat's work may go on in the next process that runs the world"
        )
        return None
