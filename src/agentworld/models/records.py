"""What the logs and the status read back: typed records instead of dicts keyed by strings.

- ``AuditEntry``: one line of a world's audit log (SPEC A9) — an approval requested or
  answered, a call a policy denied, a message a hook rewrote, a waiting call cancelled, an
  agent or chat deleted.
- ``ToolLogEntry``: one execution of a tool (SPEC E4), from its start to its end.
- ``ChatActivity``: what one chat is doing now, read from storage so that it holds whichever
  process runs the chat.

Storage builds them from its rows; ``agentworld.documents`` turns the first two into the JSON
documents the CLI prints and the HTTP API serves, so the JSON shape lives in one place and the
code in between reads attributes it can type-check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from agentworld.models.message import utc_now

AuditEvent = Literal[
    "request",
    "decision",
    "policy",
    "rewrite",
    "cancelled",
    "agent_deleted",
    "chat_deleted",
    "message_edited",
    "messages_deleted",
]
"""``request``/``decision``: an approval asked and answered (by a person or the timeout);
``policy``: a call a rule denied, or denied because nobody could be asked; ``rewrite``: an
``on_event`` hook changed a message; ``cancelled``: a waiting call whose agent was deleted;
``agent_deleted``/``chat_deleted``: the deletions themselves, which outlive what they removed;
``message_edited``/``messages_deleted``: a person's message replaced, or messages deleted, with
everything after them in the chat (SPEC K2): the removed transcript messages are in its
``detail``."""

AuditDecision = Literal["approve", "deny"]
"""The answer an entry records (``runtime.approvals.Decision``)."""

AuditScope = Literal["once", "session", "always"]
"""How far an answer reaches (``runtime.approvals.Scope``)."""

INTERRUPTED = (
    "interrupted: the process running this tool stopped; it may or may not have completed. "
    "It was not run again; check its effects before retrying."
)
"""What the model is told about a call whose process stopped while running it (and what its
tool log records)."""

ToolLogStatus = Literal["running", "ok", "error", "interrupted"]
"""``running`` until the tool returns, so a row left ``running`` by a process that died is the
evidence that the call may have had effects; ``interrupted`` once such a row is found (or the
chat was stopped while the tool ran)."""

ChatState = Literal["running", "queued", "waiting", "idle"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEntry:
    """One entry of a world's audit log, oldest first (see the module docstring)."""

    at: datetime = field(default_factory=utc_now)
    """When it happened (UTC): an auditor orders and dates decisions by it."""
    event: AuditEvent
    """What happened; the fields that follow are filled as the event has them."""
    actor: str
    """Who did it: the agent that asked, the person (or ``timeout``, ``policy``,
    ``non-interactive``) that answered, the hooks that rewrote a message."""
    approval_id: str | None = None
    """The approval request (or cancelled call) it concerns, to join request and decision."""
    agent: str | None = None
    """The agent whose call or message it concerns."""
    chat_id: str | None = None
    """The chat it happened in; kept after the chat is deleted, so the record outlives it."""
    tool_name: str | None = None
    """The tool called; None for events about no call (a rewrite, a deletion)."""
    tool_args: dict[str, Any] | None = None
    """The call's arguments as the person was shown them, secrets redacted."""
    decision: AuditDecision | None = None
    """The answer, for a ``decision`` or ``policy`` entry."""
    scope: AuditScope | None = None
    """How far an approval reaches (once, the session, always), for a ``decision`` entry."""
    latency_ms: float | None = None
    """How long the request waited for its answer: how long an agent was held up."""
    detail: dict[str, Any] | None = None
    """What else the event carries: the message asked, the rule that denied, a rewrite's
    original and processed text, what a deletion removed."""


@dataclass(frozen=True, slots=True)
class ToolLogEntry:
    """One execution of a tool, in the order executions started."""

    seq: int
    """The log's own id, in start order: one call id can have several executions."""
    tool_call_id: str
    """The model's id for the call, joining the execution to its transcript messages."""
    tool_name: str
    agent: str
    """The agent that called it."""
    chat_id: str
    input: Any
    """The arguments the tool ran with, secrets redacted (JSON)."""
    output: Any
    """What the tool returned (secrets redacted), or the reason it was interrupted; None while
    it runs."""
    status: ToolLogStatus
    started_at: datetime
    """Written before the tool runs (UTC)."""
    finished_at: datetime | None
    """None while it runs, or when its process died before it returned."""
    duration_ms: float | None
    """How long the tool ran; None while it runs."""
    runner: str | None
    """``host:pid`` of the process that ran it, to tell a call whose process died from one
    another process is running now; None in logs written before runners were recorded."""


@dataclass(frozen=True, slots=True)
class ChatActivity:
    """What one chat of a world is doing now: its queued work, who runs it, what it waits for."""

    chat_id: str
    name: str
    queued_items: int
    """Work in the chat's inbox (messages to answer, loops to resume)."""
    runner: str | None
    """The process holding the chat while it has queued work; None when none does."""
    pending_approvals: int
    """Approval requests waiting for a person."""
    pending_tool_calls: int
    """Client-side tool calls waiting for their results."""
    pending_questions: int = 0
    """Questions agents asked (``ask_user``) waiting for a person's answer."""

    @property
    def state(self) -> ChatState:
        """``running``: a process holds the chat and works on it; ``queued``: it has work no
        process runs yet; ``waiting``: only people or clients are awaited; ``idle``: nothing
        to do."""
        if self.runner is not None:
            return "running"
        if self.queued_items:
            return "queued"
        if self.pending_approvals or self.pending_tool_calls or self.pending_questions:
            return "waiting"
        return "idle"


@dataclass(frozen=True, slots=True)
class ToolLogEnd:
    """How one tool execution ended, written in the transaction of the step that stores its
    result (one write for both: the log says the call finished exactly when its result exists)."""

    seq: int
    """The execution's ``ToolLogEntry.seq``."""
    status: ToolLogStatus
    output: Any
    """What the tool returned, secrets redacted."""
    duration_ms: float


@dataclass(frozen=True, slots=True)
class UsageGroup:
    """The model calls one agent made in one chat to one model, summed (SPEC O2).
    ``cost_usd`` sums the calls whose cost is known (None when none is); ``unpriced_calls``
    counts the others (a model without a price, or a call stored before costs were)."""

    agent: str
    chat_id: str
    model: str | None
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    unpriced_calls: int
