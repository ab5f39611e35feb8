"""The items a chat queue processes, besides plain messages.

Everything that touches an agent's loop goes through its chat's queue, so one
worker at a time moves a chat forward: a message to route, a loop to resume once
every waiting call of a batch has its result, an approved tool call to run.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentworld.models import Message
from agentworld.models.pending import PendingApproval, PendingCall


@dataclass(frozen=True)
class Resume:
    """Continue an agent's loop if every call of batch ``batch_id`` now has its result."""

    agent: str
    chat_id: str
    batch_id: str
    trigger_sender: str
    reply_to: str | None

    @classmethod
    def of(cls, call: PendingCall) -> Resume:
        return cls(call.agent, call.chat_id, call.batch_id, call.trigger_sender, call.reply_to)


@dataclass(frozen=True)
class RunApproved:
    """Run a call a person approved, store its result against the original call id, resume."""

    call: PendingApproval
    log_id: int


WorkItem = Message | Resume | RunApproved
