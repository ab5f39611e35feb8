"""The authorization pipeline of the agent loop: policy first, then remembered approvals.

Rules come from, in load order (which breaks priority ties):
1. tier 1 — the tools' own settings (``approval.required``, MCP ``destructiveHint``) at
   priority 0, then the shipped ``defaults.toml``;
2. tier 2 — the world's policy files, its legacy allowed/excluded tool lists (2.3 / 2.4), and
   "approve always" answers as ALLOW rules at 2.95 (SPEC P6);
3. tier 3 — admin files named by ``$AGENTWORLD_ADMIN_POLICY``.

ALLOW runs; DENY is an error result the model reads (and an audit entry); ASK_USER is
first checked against session approvals, then goes to a person — or is denied when
nobody can be asked (SPEC P2).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentworld.approval.decisions import Allow, AskUser, Decision, Deny
from agentworld.approval.grants import Grant, find_covering_grant
from agentworld.errors import InvalidInputError
from agentworld.policy.engine import PolicyEngine, PolicyResult
from agentworld.policy.loader import (
    PolicyLoadError,
    PolicySet,
    builtin_rules,
    legacy_rules,
    load_policy_file,
)
from agentworld.policy.rules import ALWAYS_ALLOW_PRIORITY, PolicyDecision, PolicyRule, Tier
from agentworld.redaction import redact
from agentworld.tools.registry import Tool, ToolContext

if TYPE_CHECKING:
    from agentworld.models import World
    from agentworld.storage.sql import SQLStorage

ADMIN_POLICY_ENV = "AGENTWORLD_ADMIN_POLICY"
SHELL_TOOL = "shell_cmd"


def tool_default_rule(tool: Tool) -> PolicyRule:
    """A tool's own approval setting as the lowest-priority rule for it."""
    risky = tool.approval.required or (
        tool.annotations.get("destructiveHint") is True
        and tool.annotations.get("readOnlyHint") is not True
    )
    return PolicyRule(
        decision=PolicyDecision.ASK_USER if risky else PolicyDecision.ALLOW,
        priority=float(Tier.BUILTIN),
        tool_name=tool.name,
        source="tool settings",
        name=f"{tool.name} default",
    )


def always_rules(grants: list[Grant]) -> list[PolicyRule]:
    """ "Approve always" answers as ALLOW rules at 2.95, narrowed to the approved commands."""
    rules = []
    for grant in grants:
        if grant.scope != "always":
            continue
        shell = grant.tool_name == SHELL_TOOL
        if shell and not grant.roots:
            continue
        rules.append(
            PolicyRule(
                decision=PolicyDecision.ALLOW,
                priority=ALWAYS_ALLOW_PRIORITY,
                tool_name=grant.tool_name,
                command_prefixes=tuple(sorted(grant.roots)) if shell and grant.roots else None,
                allow_redirection=grant.allow_redirection,
                source=f"always:{grant.grant_id}",
                name=f"always allow {grant.tool_name}",
            )
        )
    return rules


@dataclass
class _CachedFile:
    stamp: tuple[int, int]
    loaded: PolicySet


class PolicyFiles:
    """Parsed policy files, re-read only when a file changes (mtime or size)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int], _CachedFile] = {}

    def load(self, path: str, tier: int) -> PolicySet:
        try:
            stat = Path(path).stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            return load_policy_file(path, tier=tier)  # reports file_read
        cached = self._cache.get((path, tier))
        if cached is None or cached.stamp != stamp:
            cached = self._cache[(path, tier)] = _CachedFile(
                stamp, load_policy_file(path, tier=tier)
            )
        return cached.loaded


def admin_policy_files() -> list[str]:
    return [p for p in os.environ.get(ADMIN_POLICY_ENV, "").split(os.pathsep) if p]


def check_policy_files(paths: list[str]) -> None:
    """Refuse files with any error, naming the file and rule (used when a world is configured)."""
    errors = [e for path in paths for e in load_policy_file(path).errors]
    if errors:
        raise InvalidInputError("; ".join(str(e) for e in errors))


class PolicyAuthorizer:
    def __init__(self, storage: SQLStorage, *, files: PolicyFiles | None = None) -> None:
        self._storage = storage
        self._files = files or PolicyFiles()
        self._builtin = builtin_rules()

    async def engine_for(
        self, world: World, tools: list[Tool] | None = None
    ) -> tuple[PolicyEngine, list[PolicyLoadError], list[Grant]]:
        grants = await self._storage.approvals.grants(world.name)
        errors: list[PolicyLoadError] = []
        user: list[PolicyRule] = []
        for path in world.policy_files:
            loaded = self._files.load(path, Tier.USER)
            user.extend(loaded.rules)
            errors.extend(loaded.errors)
        admin: list[PolicyRule] = []
        for path in admin_policy_files():
            loaded = self._files.load(path, Tier.ADMIN)
            admin.extend(loaded.rules)
            errors.extend(loaded.errors)
        rules = [
            *(tool_default_rule(t) for t in tools or ()),
            *self._builtin,
            *user,
            *legacy_rules(allowed_tools=world.allowed_tools, excluded_tools=world.excluded_tools),
            *always_rules(grants),
            *admin,
        ]
        return PolicyEngine(rules, mode=world.policy_mode), errors, grants

    async def authorize(
        self, tool: Tool, arguments: dict[str, Any], context: ToolContext
    ) -> Decision:
        world = await self._storage.get_world(context.world)
        engine, errors, grants = await self.engine_for(world, [tool])
        if errors:  # fail closed: a broken policy file must not silently drop a deny rule
            return Deny(
                f"the world's policy cannot be loaded ({errors[0]}); fix it before tools can run"
            )
        result = engine.evaluate(tool.name, arguments, tool.server, non_interactive=False)
        match result.decision:
            case PolicyDecision.ALLOW:
                return Allow(_explain(result))
            case PolicyDecision.DENY:
                await self._audit_denial(tool, arguments, context, result)
                rule = result.rule
                message = rule.deny_message if rule is not None and rule.deny_message else None
                return Deny(message or f"{tool.name} is denied by policy ({_explain(result)})")
        session = [g for g in grants if g.scope == "session"]
        grant = find_covering_grant(
            session, tool.name, arguments, agent=context.agent, chat_id=context.chat_id
        )
        if grant is not None:
            return Allow(f"covered by the session approval {grant.grant_id}")
        if not context.interactive:
            return Deny(
                f"{tool.name} needs a person's approval, and nobody can be asked in this run"
            )
        return AskUser(tool.approval.message or "")

    async def _audit_denial(
        self, tool: Tool, arguments: dict[str, Any], context: ToolContext, result: PolicyResult
    ) -> None:
        await self._storage.approvals.audit(
            context.world,
            event="policy",
            actor="policy",
            agent=context.agent,
            chat_id=context.chat_id,
            tool_name=tool.name,
            arguments=redact(arguments),
            decision="deny",
            detail=result.to_json(),
        )


def _explain(result: PolicyResult) -> str:
    rule = result.rule
    if rule is None:
        return result.reason or "the default decision"
    where = rule.source + (f" rule {rule.index}" if rule.index is not None else "")
    return f"{rule.name or 'rule'} from {where}" + (f": {result.reason}" if result.reason else "")
