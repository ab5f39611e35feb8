"""What every step of an agent turn needs, built once per world runtime."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agentworld.events.bus import EventBus
from agentworld.models import Agent, World
from agentworld.models.work import StepResult
from agentworld.providers.base import LLMProvider
from agentworld.runtime.hooks import OnEvent
from agentworld.runtime.memory_cache import MemoryCache
from agentworld.storage.sql import SQLStorage
from agentworld.tools.registry import Tool, ToolContext, ToolRegistry

if TYPE_CHECKING:
    from agentworld.approval.decisions import Decision
    from agentworld.runtime.authorizer import Authorizer, PolicyAuthorizer
    from agentworld.runtime.streaming import StreamCallbacks


UNATTENDED: ContextVar[bool] = ContextVar("agentworld_unattended", default=False)
"""Whether the inbox item being done was queued by a run nobody attends (``_Work.unattended``):
set by the runtime around each item, read by the loop and by ``unattended_step``."""


def unattended_step(step: StepResult) -> StepResult:
    """``step`` with the work it queues marked unattended when the item doing it is, so a
    conversation an unattended run started stays unattended in every process."""
    inbox = step.inbox
    if not UNATTENDED.get() or inbox is None:
        return step

    def marked(items: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(w if w.unattended else w.model_copy(update={"unattended": True}) for w in items)

    return replace(
        step,
        inbox=replace(
            inbox,
            append=marked(inbox.append),
            becomes=marked(inbox.becomes) if inbox.becomes else inbox.becomes,
        ),
    )


Steps = AsyncGenerator[StepResult, None]
"""A piece of a chat's work as the steps it takes: each is committed and published by the
runtime (``WorldRuntime.apply``) before the next is asked for, so a crash loses at most the
step in flight (SPEC O3)."""


class PolicyOnFirstCall:
    """The runtime's default ``Authorizer``: the world's policy
    (``runtime.authorizer.PolicyAuthorizer``), built when the first tool call is authorized.
    Building it loads the policy rules, path views and argument checks; a process whose turns
    call no tool never needs them. Once built, it is the
    same object for every call, with what it keeps between calls."""

    __slots__ = ("_storage", "_built")

    def __init__(self, storage: SQLStorage) -> None:
        self._storage = storage
        self._built: PolicyAuthorizer | None = None

    async def authorize(self, tool: Tool, arguments: dict[str, Any], context: ToolContext) -> Decision:
        if self._built is None:
            from agentworld.runtime.authorizer import PolicyAuthorizer

            self._built = PolicyAuthorizer(self._storage)
        return await self._built.authorize(tool, arguments, context)


@dataclass(frozen=True, eq=False)
class TurnContext:
    """What a turn's steps read and call: the runtime's stores, caches, providers, tools and
    hooks. Steps change nothing through it: they return what they did (``StepResult``).
    Compared by identity, as a bundle of collaborators is."""

    storage: SQLStorage
    memory: MemoryCache
    bus: EventBus
    provider_for: Callable[[Agent], LLMProvider]
    tools_for: Callable[[World], Awaitable[ToolRegistry]]
    """The world's tool registry (built-ins, MCP servers, client tools)."""
    authorizer: Authorizer
    interactive: bool = True
    """Whether a person can answer approval requests from this runtime (work it posts is
    ``unattended`` otherwise, wherever it runs)."""
    hooks_for: Callable[[World], Sequence[OnEvent]] = lambda world: ()
    """The ``on_event`` hooks in force for a world (SPEC E3)."""
    streaming: StreamCallbacks | None = None
    """Embedder callbacks for streamed output (SPEC E5)."""
