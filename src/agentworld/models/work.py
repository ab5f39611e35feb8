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

The steps that do an item return what they did as values (``StepResult``: the messages to
store, the events, the inbox change, and what comes next — ``Continue``, ``Wait`` or
``Done``); the runtime commits each in one transaction before the next step begins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from agentworld.models.events import WorldEvent
from agentworld.models.message import Message
from agentworld.models.pending import PendingCall, PendingKind
from agentworld.models.records import AuditEntry, ToolLogEnd


class _Work(BaseModel):
    model_config = ConfigDict(frozen=True)

    traceparent: str | None = None
    """The trace context (W3C ``traceparent``) of the work that queued this item: whoever does
    it continues that trace, in any process (``agentworld.tracing``). Stored only when set."""
    unattended: bool = False
    """Queued by a run nobody attends (``send --approve deny``): a call that would ask a person
    is denied, in whichever process does the work (a Temporal worker, another ``serve``), and
    the work it queues is unattended too. Stored only when set."""


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
    calls: int = 0
    """Model calls the loop has made: the iteration cap, and the one call a fresh budget
    allows, count from here wherever the loop goes on (another process, a Temporal activity)."""


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
    next item, to start on), and the transcript position just before the message."""

    claimed: bool
    first: QueuedWork | None
    after_seq: int


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


@dataclass(frozen=True, slots=True)
class Continue:
    """The loop goes on: the model is asked again."""

    kind: Literal["continue"] = "continue"


@dataclass(frozen=True, slots=True)
class Wait:
    """The loop waits for an answer from outside it (a person's approval, a client's result);
    the answer queues its continuation."""

    kind: Literal["wait"] = "wait"


@dataclass(frozen=True, slots=True)
class Done:
    """The item's work is over (an answer, a hand-back, a stop at the iteration cap)."""

    kind: Literal["done"] = "done"


NextStep = Continue | Wait | Done
CONTINUE: Final = Continue()
WAIT: Final = Wait()
DONE: Final = Done()


@dataclass(frozen=True, slots=True)
class Answer:
    """The answer a step gives a waiting call (a person's approval, a client's result, a
    timeout): recorded exactly once, across processes, or the step is refused whole."""

    kind: PendingKind
    tool_call_id: str
    answer: dict[str, Any]
    status: Literal["answered", "expired"] = "answered"


@dataclass(frozen=True, slots=True)
class StepResult:
    """What one step of a chat's work did, as a value: the runtime commits it in one
    transaction (``WorldRuntime.apply``), then publishes its events and messages and starts
    the runners of chats that got work. Nothing of it is written before that commit.

    ``said`` goes into the chat's transcript (and is routed when it speaks to someone);
    ``memory`` into agents' memories; ``llm_calls`` counts the named agent's model calls;
    ``events`` are logged with the step, before its messages (a stream's end, a tool's result
    event), ``announced`` after them (the ``approval`` event of the request or answer they
    carry: a reader of the log has the message when the event comes); ``tool_log_end`` ends the tool log whose result this
    is; ``waiting`` is a call that now waits outside the loop, ``answers`` the waiting call
    this step answers, ``audit`` what the audit log records of the step; ``fresh_budgets``
    gives every agent of the world a fresh turn budget (a person's or the world's message,
    SPEC R4); ``inbox`` is what the step does to its chat's inbox (the item it
    finishes and what replaces it); ``next`` what comes after it."""

    chat_id: str
    said: tuple[Message, ...] = ()
    memory: tuple[tuple[str, Message], ...] = ()
    llm_calls: tuple[str, int] | None = None
    events: tuple[WorldEvent, ...] = ()
    announced: tuple[WorldEvent, ...] = ()
    tool_log_end: ToolLogEnd | None = None
    waiting: PendingCall | None = None
    answers: Answer | None = None
    audit: AuditEntry | None = None
    fresh_budgets: bool = False
    inbox: InboxChange | None = None
    next: NextStep = CONTINUE

    @staticmethod
    def spoken(
        message: Message,
        *,
        by: str | None = None,
        llm_calls: int = 0,
        finishes: int | None = None,
        then: tuple[WorkItem, ...] = (),
        events: tuple[WorldEvent, ...] = (),
        tool_log_end: ToolLogEnd | None = None,
        next: NextStep = CONTINUE,
    ) -> StepResult:
        """A step that says ``message`` in its chat — with ``by``, also into that agent's memory
        with ``llm_calls`` counted — and, with ``finishes``, replaces that inbox item by ``then``
        (removes it when ``then`` is empty)."""
        chat = message.chat_id
        return StepResult(
            chat,
            said=(message,),
            memory=((by, message),) if by is not None else (),
            llm_calls=(by, llm_calls) if by is not None and llm_calls else None,
            events=events,
            tool_log_end=tool_log_end,
            inbox=InboxChange(chat, current=finishes, becomes=then) if finishes is not None else None,
            next=next,
        )
