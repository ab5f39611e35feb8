"""Running the hooks on an event (``runtime.hooks`` has the contract they are written to).

Imported where a step finds hooks in force: a world without hooks never loads it, which
keeps a fresh process's first turn short.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentworld.callbacks import maybe_await
from agentworld.events.bus import EventBus
from agentworld.models.events import MessageEvent, SystemEvent, ToolCallEvent
from agentworld.models.message import Message, Role
from agentworld.models.records import AuditEntry
from agentworld.process_secrets import redact_process_text
from agentworld.redaction import redact_text
from agentworld.routing.messages import is_routable
from agentworld.runtime.hooks import EnqueueAfter, HookEvent, OnEvent
from agentworld.storage.sql import SQLStorage

logger = logging.getLogger("agentworld.hooks")


@dataclass(frozen=True)
class Response:
    """A message a hook sends in place of the default step."""

    content: str
    sender: str
    role: Role = "assistant"
    enqueue_after: EnqueueAfter = "immediately"


@dataclass
class Respond:
    """The ``respond`` callable handed to hooks; it records, the runtime acts afterwards."""

    default_sender: str
    responses: list[Response] = field(default_factory=list)

    async def __call__(
        self,
        content: str,
        *,
        sender: str | None = None,
        role: Role = "assistant",
        enqueue_after: EnqueueAfter = "immediately",
    ) -> None:
        self.responses.append(Response(content, sender or self.default_sender, role, enqueue_after))


def hook_name(hook: OnEvent) -> str:
    return getattr(hook, "__qualname__", repr(hook))


@dataclass(frozen=True)
class Dispatched:
    event: HookEvent
    responses: list[Response]
    changed_by: tuple[str, ...] = ()
    """The hooks that returned an event of their own, in order (for the audit log)."""

    @property
    def responded(self) -> bool:
        return bool(self.responses)


async def dispatch(
    hooks: Sequence[OnEvent], event: HookEvent, *, default_sender: str, bus: EventBus
) -> Dispatched:
    current = event
    respond = Respond(default_sender)
    changed_by: list[str] = []
    for hook in hooks:
        try:
            result = await maybe_await(hook(current, respond))
        except Exception as exc:
            name = hook_name(hook)
            logger.error("on_event hook %s failed on %s", name, current.kind, exc_info=exc)
            await bus.publish(
                SystemEvent(
                    world=bus.world,
                    level="error",
                    text=f"on_event hook {name} failed: {redact_process_text(str(exc))}",
                    chat_id=current.chat,
                    reason="hook_failed",
                    context={"source": "hook", "hook": name, "event_kind": current.kind},
                )
            )
            continue
        if result is not None:
            if not isinstance(result, MessageEvent | ToolCallEvent) or result.kind != current.kind:
                logger.error(
                    "on_event hook returned %r for a %s event; ignored", type(result), current.kind
                )
            else:
                if result != current:
                    changed_by.append(hook_name(hook))
                current = result
        if respond.responses:
            break
    return Dispatched(current, respond.responses, tuple(changed_by))


async def record_rewrite(
    storage: SQLStorage, bus: EventBus, said: Message, processed: str, hooks: tuple[str, ...]
) -> None:
    """Put a hook's rewrite in the audit log beside what was said (both redacted, like every
    log), and tell the watchers: the transcript keeps the original, so without this nobody
    could see what the agents were actually given."""
    used = is_routable(said)
    detail = {
        "messageId": said.message_id,
        "sender": said.sender,
        "original": redact_text(said.content or ""),
        "processed": redact_text(processed),
        "used": used,
    }
    await storage.approvals.audit(
        bus.world,
        AuditEntry(
            event="rewrite",
            actor=", ".join(hooks) or "hook",
            agent=said.agent_id,
            chat_id=said.chat_id,
            detail=detail,
        ),
    )
    text = (
        f"an on_event hook rewrote message {said.message_id}: the agents answer the rewrite; "
        "the transcript keeps what was said"
        if used
        else f"an on_event hook rewrote {said.role} message {said.message_id}, which was already "
        "used: the rewrite changes nothing (intercept the tool call instead)"
    )
    await bus.publish(
        SystemEvent(
            world=bus.world,
            level="info" if used else "warning",
            text=text,
            chat_id=said.chat_id,
            reason="hook_rewrite",
            context={"source": "hook", "rewrite": detail},
        )
    )
