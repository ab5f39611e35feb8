"""The authorization seam: every tool call gets a decision before it runs.

Decisions are values, not exceptions: ``Allow``, ``Deny`` (with the reason the
model will read) or ``AskUser`` (a person must approve first). The orchestrator
asks an ``Authorizer``; the policy engine and remembered approvals plug in
behind that one method without the orchestrator changing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentworld.approval.grants import find_covering_grant
from agentworld.tools.registry import Tool, ToolContext

if TYPE_CHECKING:
    from agentworld.storage.sql import SQLStorage


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


class ApprovalAuthorizer:
    """Decide from the tool's ``approval.required`` flag (SPEC T1) and remembered approvals
    (SPEC A5); with nobody to ask, a call that needs a person is denied (SPEC P2)."""

    def __init__(self, storage: SQLStorage) -> None:
        self._storage = storage

    async def authorize(self, tool: Tool, arguments: dict[str, Any], context: ToolContext) -> Decision:
        if not tool.approval.required:
            return Allow()
        grants = await self._storage.approvals.grants(context.world, tool_name=tool.name)
        grant = find_covering_grant(
            grants, tool.name, arguments, agent=context.agent, chat_id=context.chat_id
        )
        if grant is not None:
            return Allow(f"covered by the {grant.scope} approval {grant.grant_id}")
        if not context.interactive:
            return Deny(f"{tool.name} needs a person's approval, and nobody can be asked in this run")
        return AskUser(tool.approval.message or "")
