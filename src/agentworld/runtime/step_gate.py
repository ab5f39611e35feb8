"""Where a Temporal worker's activity ends: before a model call or a tool call it is not to make.

On Temporal each model call and each tool call of a chat is an activity of its own (SPEC S1):
a model call may be retried on another worker, a tool call never is (S2), and a tool call runs
on the task queue of the host that holds the world's working directory. The runtime stays one
path: a worker's activity runs the chat's inbox as every process does, under a ``StepGate``
that lets through at most the one step the activity is for; the next model or tool call
raises ``StepReached`` before anything of it happens. Everything before it is committed, so the
next activity continues from storage (a loop from its memory, a batch from its first call
without a result). Outside a worker no gate is set and nothing stops.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

StepKind = Literal["model", "tool"]
"""A model call (with the answer it gives), or one tool call (authorized, then run or asked about)."""


class StepReached(BaseException):
    """The chat's work came to a step its activity does not take. A ``BaseException``, as
    cancellation is: no ``except Exception`` on the way (a tool's error result, an item's
    failure report) may take it for a failure."""

    def __init__(self, kind: StepKind) -> None:
        super().__init__(kind)
        self.kind: StepKind = kind


@dataclass
class StepGate:
    """Lets through one step of kind ``allow`` (None: none) and stops the work before any other."""

    allow: StepKind | None
    taken: bool = False
    held_open: int = 0
    """While above 0, every call goes through (``held_open``)."""

    def enter(self, kind: StepKind) -> None:
        if self.held_open:
            return
        if kind == self.allow and not self.taken:
            self.taken = True
            return
        raise StepReached(kind)


GATE: ContextVar[StepGate | None] = ContextVar("agentworld_step_gate", default=None)
"""The gate of the activity doing this work (set in a Temporal worker only)."""


def enter(kind: StepKind) -> None:
    """Before a model call or a tool call: go on, or end the activity here (``StepReached``)."""
    gate = GATE.get()
    if gate is not None:
        gate.enter(kind)


@contextmanager
def held_open() -> Iterator[None]:
    """Let every call through while inside: work whose end only this activity can see (a
    hook's reply that follows a batch's results, held in this process) is not split."""
    gate = GATE.get()
    if gate is None:
        yield
        return
    gate.held_open += 1
    try:
        yield
    finally:
        gate.held_open -= 1
