"""The work a chat must do, as stored in its inbox.

Every unit of work is a row in the chat's persisted inbox, written in the same
transaction as the message or answer that causes it, so work survives the
process that was doing it: whoever next runs the chat finds it there. A chat's
items are done one at a time, in order, by the one process holding the chat's
lease. An item is removed (or replaced by what comes next) in the same
transaction as the step that finishes it, so it is done exactly once.

The kinds, in the order a message usually moves through them:

* ``route``: offer a published message to the world's agents (hooks first); it
  becomes, in its place, one ``loop`` per agent that answers — the message joins each
  one's memory in the same transaction — or a ``turn`` for an agent whose turn budget
  is spent (it hands back to the people when its turn comes).
* ``turn``: an agent takes a message into its memory and starts answering it;
  it becomes a ``loop`` in the same transaction.
* ``loop``: an agent's answering loop, resumable from its last committed step.
* ``resume``: a waiting batch got a result (approval answer, client result);
  it becomes a ``loop`` once every call of the batch has its result.
* ``run_approved``: run a call a person approved, then ``resume``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from agentworld.models.domain import Agent, World
from agentworld.models.message import Message
from agentworld.models.pending import PendingApproval


class _Work(BaseModel):
    model_config = ConfigDict(frozen=True)


class Route(_Work):
    """Offer ``message`` to the agents of its world."""

    kind: Literal["route"] = "route"
    message: Message


class Turn(_Work):
    """``agent`` answers ``message`` (not started: its memory does not hold it yet)."""

    kind: Literal["turn"] = "turn"
    agent: str
    message: Message


class Loop(_Work):
    """``agent``'s loop in the chat, started: it continues from what its memory holds."""

    kind: Literal["loop"] = "loop"
    agent: str
    answer_to: str
    """Who the agent is answering (a reply without a mention goes back to them)."""
    reply_to: str | None
    fresh: bool = False
    """It answers a person (or the world), whose message gave every agent a fresh turn budget:
    its first model call is within the turn limit by definition."""


class Resume(_Work):
    """Continue ``agent``'s loop once every call of batch ``batch_id`` has its result."""

    kind: Literal["resume"] = "resume"
    agent: str
    batch_id: str
    answer_to: str
    reply_to: str | None


class RunApproved(_Work):
    """Run the call approved in ``approval_id``; ``started`` is committed (with the tool log's
    start) before it runs, so a process that finds it started knows the call was
    interrupted and never runs it again."""

    kind: Literal["run_approved"] = "run_approved"
    approval_id: str
    started: bool = False


WorkItem = Annotated[Route | Turn | Loop | Resume | RunApproved, Field(discriminator="kind")]
WORK_ITEM: TypeAdapter[WorkItem] = TypeAdapter(WorkItem)


@dataclass(frozen=True)
class QueuedWork:
    """An item as it sits in a chat's inbox: its row id names it in later changes."""

    item_id: int
    chat_id: str
    work: WorkItem


@dataclass(frozen=True)
class Posted:
    """What posting a message into a chat did: whether the poster claimed the chat (and its
    next item, to start on), and the transcript position just before the message — what the
    post causes is read after it, without a read of its own."""

    claimed: bool
    first: QueuedWork | None
    after_seq: int
    world: tuple[World, list[Agent]] | None = None
    """The world's settings and agents as the post left them, read in its transaction when
    the poster claimed the chat: the route it does next need not read them again."""
    taken_up: TakenUp | None = None
    """Set when the post also routed the message (``first`` is then the answering agent's
    ``loop``): that agent's settings and memory, read in the same transaction."""


@dataclass(frozen=True)
class TakenUp:
    """An agent's settings and its memory of a chat after ``after_seq`` (up to ``last_seq``),
    read in the transaction that put the message it answers into that memory: its loop's
    first step starts from them instead of reading them again."""

    agent: Agent
    memory: list[Message]
    after_seq: int
    last_seq: int


class ChatReport:
    """What a command produced in a chat -- its transcript after ``after_seq`` and the
    approvals still waiting there -- read in the transaction that released the chat, for the
    command waiting on that chat (``ChatRunners.want_report``): its ``send`` then ends without
    a read of its own. ``writes`` is the store's count of write units when it was read
    (``StorageCore.writes_run``); once that count moves on, a read may find more, and the
    report is not used. (A plain class: defining a dataclass slows a fresh process's first
    turn.)"""

    __slots__ = ("messages", "waiting", "after_seq", "writes")

    def __init__(
        self, messages: list[Message], waiting: list[PendingApproval], after_seq: int, writes: int
    ) -> None:
        self.messages = messages
        self.waiting = waiting
        self.after_seq = after_seq
        self.writes = writes


@dataclass(frozen=True)
class LeaseAfterStep:
    """The chat's lease after a write that finished the chat's last known item and asked to
    release the chat's lease in its own transaction: ``held`` with the ``next`` item when more
    work had been queued meanwhile, else released -- ``released``: by this owner, its inbox
    empty; not ``released``: the chat was no longer this owner's. ``report``: what the waiting
    command asked to be read when the lease is released (``ChatReport``)."""

    held: bool
    next: QueuedWork | None
    released: bool = False
    report: ChatReport | None = None


@dataclass(frozen=True)
class StepRecorded:
    """What a step's write found beyond storing the step, in the same transaction: the chat's
    lease when the step was to let it go (``LeaseAfterStep``), and, when the step was to look,
    what naming the chat needs (its transcript and the world's agents) or ``"titled"``: the
    title step after the chat's first exchange then reads nothing (SPEC O5)."""

    lease: LeaseAfterStep | None = None
    naming: tuple[list[Message], list[Agent]] | Literal["titled"] | None = None
    """None: the step was not asked to look."""


@dataclass(frozen=True)
class InboxChange:
    """What one step does to its chat's inbox, committed with the step's own writes.

    ``append`` goes to the end of the chat's inbox. ``current`` is the item the step
    belongs to; ``becomes`` says what happens to it: ``None`` leaves it, ``()`` removes it
    (done), ``(x,)`` replaces it by ``x`` in place, more items follow ``x`` in its place,
    before anything queued after it. ``drop`` removes other items without doing them.
    """

    chat_id: str
    append: tuple[WorkItem, ...] = ()
    current: int | None = None
    becomes: tuple[WorkItem, ...] | None = None
    drop: tuple[int, ...] = ()
    """Items removed undone (a person stopped the chat's work)."""

    @property
    def adds_work(self) -> bool:
        return bool(self.append) or bool(self.becomes)
