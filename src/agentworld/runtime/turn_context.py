"""What every step of an agent turn needs, built once per world runtime."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworld.events.bus import EventBus
from agentworld.models import Agent, Message, World
from agentworld.models.events import WorldEvent
from agentworld.models.records import ToolLogEnd
from agentworld.models.work import InboxChange, WorkItem
from agentworld.providers.base import LLMProvider
from agentworld.runtime.hooks import OnEvent
from agentworld.runtime.memory_cache import MemoryCache
from agentworld.storage.sql import SQLStorage
from agentworld.tools.registry import Tool, ToolContext, ToolRegistry

if TYPE_CHECKING:
    from agentworld.approval.decisions import Decision
    from agentworld.runtime.authorizer import Authorizer, PolicyAuthorizer
    from agentworld.runtime.streaming import StreamCallbacks


@dataclass(frozen=True, slots=True)
class Step:
    """One step to commit: ``message`` in the transcript — and, with ``memory_of``, in that
    agent's memory with its LLM call count; its routing queued; the inbox item it ``settles``
    replaced by ``then``; the ``events`` that go with it (the ``end`` of the streamed call that
    produced it, the ``tool`` result event of a tool's result) and how the tool run ended — in
    one transaction (``TurnContext.publish``), then the events and the message published and
    what it queued run."""

    message: Message
    memory_of: str | None = None
    llm_calls: int = 0
    settles: int | None = None
    then: tuple[WorkItem, ...] = ()
    events: tuple[WorldEvent, ...] = ()
    tool_log_end: ToolLogEnd | None = None


class PolicyOnFirstCall:
    """The runtime's default ``Authorizer``: the world's policy
    (``runtime.authorizer.PolicyAuthorizer``), built when the first tool call is authorized.
    Building it loads the policy rules, path views and argument checks (some 3 ms in a fresh
    process); a process whose turns call no tool never needs them. Once built, it is the
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
    """What a turn's steps work with: the runtime's stores, caches and callbacks. Compared by
    identity, as a bundle of collaborators is (no generated ``__eq__`` to build or call)."""

    storage: SQLStorage
    memory: MemoryCache
    bus: EventBus
    provider_for: Callable[[Agent], LLMProvider]
    tools_for: Callable[[World], Awaitable[ToolRegistry]]
    """The world's tool registry (built-ins, MCP servers, client tools)."""
    authorizer: Authorizer
    publish: Callable[[Step], Awaitable[None]]
    """Commit a step, run subscribers and route its message (SPEC E2)."""
    settle: Callable[[InboxChange], Awaitable[None]]
    """Commit an inbox change that no message goes with, and run what it queued."""
    kick: Callable[[str], None]
    """Make sure a chat whose inbox just got work (in a commit of its own) is run."""
    interactive: bool = True
    """Whether a person can answer approval requests from this runtime."""
    hooks_for: Callable[[World], Sequence[OnEvent]] = lambda world: ()
    """The ``on_event`` hooks in force for a world (SPEC E3)."""
    streaming: StreamCallbacks | None = None
    """Embedder callbacks for streamed output (SPEC E5)."""
