"""The authorization seam: every tool call gets a decision before it runs.

Decisions are values, not exceptions: ``Allow``, ``Deny`` (with the reason the
model will read) or ``AskUser`` (a person must approve first). The orchestrator
asks an ``Authorizer``; the default one (``policy.authorizer.PolicyAuthorizer``)
combines the policy engine and remembered approvals behind that one method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agentworld.tools.registry import Tool, ToolContext


@dataclass(frozen=True, slots=True)
class Allow:
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Deny:
    reason: str


@dataclass(frozen=True, slots=True)
class AskUser:
    message: str = ""


Decision = Allow | Deny | AskUser


class Authorizer(Protocol):
    async def authorize(self, tool: Tool, arguments: dict[str, Any], context: ToolContext) -> Decision: ...
