"""Which engine runs a chat's work: this process (the default) or Temporal (SPEC S1).

With ``AGENTWORLD_TEMPORAL=HOST:PORT`` set, every chat's inbox is drained by ``agentworld
worker`` processes, each chat as one Temporal workflow (``runtime.chat_workflow``); other
processes only commit what people do and wake the chat's workflow. Reading the setting never
imports ``temporalio``: a process without the variable does not load it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

ADDRESS_VARIABLE = "AGENTWORLD_TEMPORAL"
NAMESPACE_VARIABLE = "AGENTWORLD_TEMPORAL_NAMESPACE"
QUEUE_VARIABLE = "AGENTWORLD_TEMPORAL_TASK_QUEUE"


@dataclass(frozen=True)
class TemporalSettings:
    """Where the Temporal service is, and the task queue chat workflows run on."""

    address: str
    namespace: str = "default"
    task_queue: str = "agentworld"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TemporalSettings | None:
        """The deployment's Temporal settings, or None when chats run in-process."""
        env = os.environ if env is None else env
        address = env.get(ADDRESS_VARIABLE, "").strip()
        if not address:
            return None
        return cls(
            address=address,
            namespace=env.get(NAMESPACE_VARIABLE, "").strip() or "default",
            task_queue=env.get(QUEUE_VARIABLE, "").strip() or "agentworld",
        )


def workflow_id(world: str, chat_id: str) -> str:
    """The id of a chat's workflow: one per chat, so Temporal keeps one runner per chat."""
    return f"agentworld:{world}:{chat_id}"
