"""The one interception point (SPEC E3): ``on_event(event, respond)``.

Hooks run where the runtime takes its next step, always after the event is stored (SPEC
E2): when a message published in a chat is routed — every message: people's, agents',
tool results and system notes — and when an agent's model has returned tool calls, before
any runs. A hook may

- return an event: that event is processed instead (a rewritten message, changed calls);
- return None: the original goes on;
- call ``respond(content, ...)``: the default step is skipped and the programmatic
  message is published (persisted, routed) instead. For tool calls,
  ``enqueue_after="tool_results"`` lets the tools run and be stored first, and the
  programmatic message then takes the place of the model's next turn.

The contract of a rewrite: the chat's transcript keeps what was said (subscribers saw it
when it was stored), the rewrite is what the agents take into their memories and answer,
and the audit log records both (event ``rewrite``). Tool results and system notes reach the
hooks after they were used — a hook may ``respond`` to them, but a rewrite of one changes
nothing and is reported as such; to change what a tool returns, intercept its call.

A hook that raises is reported as a ``system`` event and the default path goes on.
Hooks are plain functions or coroutines; several run in registration order. Running them is
``runtime.hook_dispatch``, imported only where hooks are in force; ``respond`` is its
:class:`~agentworld.runtime.hook_dispatch.Respond` (a world without hooks does not define it).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Literal

from agentworld.errors import InvalidInputError
from agentworld.models.domain import World
from agentworld.models.events import MessageEvent, ToolCallEvent

if TYPE_CHECKING:
    from agentworld.runtime.hook_dispatch import Respond

HookEvent = MessageEvent | ToolCallEvent
EnqueueAfter = Literal["immediately", "tool_results"]


OnEvent = Callable[[HookEvent, "Respond"], "Awaitable[HookEvent | None] | HookEvent | None"]


def load_hook(spec: str) -> OnEvent:
    """A hook named by import path, ``package.module:function`` (world setting ``hooks``)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise InvalidInputError(f"hook {spec!r} must look like 'package.module:function'")
    try:
        hook = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        importable = (
            "; the module must be importable by every process that runs the world: install it, "
            "or add its directory to PYTHONPATH (PYTHONPATH=. for the current directory)"
        )
        raise InvalidInputError(
            f"cannot load hook {spec!r}: {exc}{importable if isinstance(exc, ImportError) else ''}"
        ) from exc
    if not callable(hook):
        raise InvalidInputError(f"hook {spec!r} is not callable")
    return hook


class HookSet:
    """The hooks of one world's runtime: those registered in Python, then those the world's
    settings name by import path (loaded once per process)."""

    def __init__(self, registered: Sequence[OnEvent] = ()) -> None:
        self._registered = list(registered)
        self._loaded: dict[str, OnEvent] = {}
        self._world_names_hooks = False
        """Whether the world's settings named hooks when last read."""

    def register(self, hook: OnEvent) -> OnEvent:
        self._registered.append(hook)
        return hook

    def note(self, world: World) -> None:
        """Remember whether the world's settings name hooks (refreshed whenever it is read)."""
        self._world_names_hooks = bool(world.hooks)

    @property
    def registered(self) -> bool:
        """Whether hooks were registered in Python (the world's settings aside)."""
        return bool(self._registered)

    @property
    def may_exist(self) -> bool:
        """Whether a message must be offered to hooks — decided without reading storage."""
        return bool(self._registered) or self._world_names_hooks

    def for_world(self, world: World) -> list[OnEvent]:
        self.note(world)
        named = []
        for spec in world.hooks:
            if spec not in self._loaded:
                self._loaded[spec] = load_hook(spec)
            named.append(self._loaded[spec])
        return [*self._registered, *named]
