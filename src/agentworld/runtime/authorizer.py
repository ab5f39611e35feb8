"""The authorization pipeline of the agent loop: policy first, then remembered approvals.

Rules come from, in load order (which breaks priority ties):
1. tier 1 — the tools' own settings at priority 0 (``tool_default_rule``: built-in tools by
   ``approval.required``; MCP tools ask unless read-only or their server is trusted), then the
   shipped ``defaults.toml``, and, when the world's commands run in an active sandbox,
   ``sandboxed_defaults.toml`` (read-only commands allowed);
2. tier 2 — the world's own rules (``policyRules``, before its files: they are written for this
   world alone, so they win a tie with a file several worlds may share), the world's policy files, its legacy allowed/excluded tool lists (2.3 / 2.4), and
   "approve always" answers as ALLOW rules at 2.95 (SPEC P6);
3. tier 3 — admin files named by ``$AGENTWORLD_ADMIN_POLICY``.

ALLOW runs; DENY is an error result the model reads (and an audit entry); ASK_USER is
first checked against session approvals (and, for a shell line that writes files, against the
files an "always" approval saw written), then goes to a person — or is denied when nobody can
be asked (SPEC P2). A call a person approved is authorized again just before it runs
(``ToolContext.approval_id``, SPEC C3): a DENY in force then refuses it, and is audited.

``decide_call`` is that whole decision as a pure function, and ``load_rules`` the one place
the tiers are put together: the runtime (``PolicyAuthorizer.authorize``) and
``agentworld policy test`` / ``policy list`` both go through them, so what the CLI prints is
what the runtime does.

The policy engine (with its pattern compiler) and the policy file loader (with its TOML
parser) are imported where they are first used, not with this module: a process whose turns
call no tool (most CLI ``send``s, a server's first answer) never needs them, and with the
approval display (``runtime.approvals``) they were about a third of the runtime's import.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentworld.approval.decisions import Allow, AskUser, Decision, Deny
from agentworld.approval.grants import (
    Grant,
    PolicyState,
    Resolve,
    find_covering_grant,
    without_writes,
)
from agentworld.models.records import AuditEntry
from agentworld.policy.grant_rules import always_rules
from agentworld.policy.rules import PolicyDecision, PolicyRule, Tier, could_be_denied
from agentworld.redaction import redact
from agentworld.runtime.path_views import most_severe, redirect_resolver, resolved_views
from agentworld.runtime.policy_files import ADMIN_POLICY_ENV as ADMIN_POLICY_ENV
from agentworld.runtime.policy_files import WORLD_RULES_SOURCE
from agentworld.runtime.policy_files import PolicyFiles as PolicyFiles
from agentworld.runtime.policy_files import admin_policy_files as admin_policy_files
from agentworld.runtime.policy_files import check_policy_files as check_policy_files
from agentworld.shell import SHELL_TOOL
from agentworld.tools.registry import CLIENT_PREFIX, Tool, ToolContext, ToolRegistry
from agentworld.tools.validation import ArgumentError, validate_arguments

if TYPE_CHECKING:
    from agentworld.models import World
    from agentworld.models.domain import NetworkMode, SandboxMode
    from agentworld.policy.engine import PolicyEngine, PolicyResult
    from agentworld.policy.loader import PolicyLoadError, PolicySet
    from agentworld.storage.sql import SQLStorage

def tool_default_rule(tool: Tool) -> PolicyRule:
    """A tool's own approval setting as the lowest-priority rule for it.

    A built-in or client tool asks when it says ``approval.required`` (or is destructive). An
    MCP tool asks unless its server is trusted or its annotations say ``readOnlyHint: true``
    without ``destructiveHint: true``: annotations come from the server, and MCP itself says a
    tool without them may be destructive, so silence never means "harmless".
    """
    hints = tool.annotations
    read_only = hints.get("readOnlyHint") is True
    destructive = hints.get("destructiveHint") is True
    if tool.server is None:
        risky = tool.approval.required or (destructive and not read_only)
        why = "approval required" if risky else "no approval required"
    elif tool.approval.required:
        risky, why = True, "approval required"
    elif tool.trusted:
        risky, why = False, f"MCP server {tool.server!r} is trusted"
    elif read_only and not destructive:
        risky, why = False, "MCP tool annotated readOnlyHint"
    else:
        risky, why = True, "MCP tool not annotated read-only"
    return PolicyRule(
        decision=PolicyDecision.ASK_USER if risky else PolicyDecision.ALLOW,
        priority=float(Tier.BUILTIN),
        tool_name=tool.name,
        source="tool settings",
        name=f"{tool.name} default ({why})",
    )


class Authorizer(Protocol):
    """The authorization seam: every tool call gets a decision before it runs. The default,
    :class:`PolicyAuthorizer`, combines the policy engine and remembered approvals."""

    async def authorize(self, tool: Tool, arguments: dict[str, Any], context: ToolContext) -> Decision: ...


def load_rules(
    files: PolicyFiles,
    *,
    tools: Iterable[Tool] = (),
    builtin: Sequence[PolicyRule] | None = None,
    world_rules: Sequence[Mapping[str, Any]] = (),
    user_files: Sequence[str] = (),
    allowed_tools: Sequence[str] = (),
    excluded_tools: Sequence[str] = (),
    grants: Iterable[Grant] = (),
    sandboxed: bool = False,
) -> PolicySet:
    """Every rule of every tier, in load order, and the errors of the files read — the one place
    the tiers are put together. Admin files always come from ``$AGENTWORLD_ADMIN_POLICY``.
    ``sandboxed``: the world's commands run in an active sandbox, which brings the shipped
    read-only commands in (``sandboxed_defaults.toml``). ``world_rules``: the rules the world
    holds itself (``policyRules``), read by the policy file reader, at tier 2 before its files."""
    from agentworld.policy.loader import (
        PolicySet,
        builtin_rules,
        legacy_rules,
        load_policy_tables,
        sandboxed_rules,
    )

    own = load_policy_tables(world_rules, source=WORLD_RULES_SOURCE, tier=Tier.USER)
    errors: list[PolicyLoadError] = list(own.errors)
    user: list[PolicyRule] = list(own.rules)
    for path in user_files:
        loaded = files.load(path, Tier.USER)
        user.extend(loaded.rules)
        errors.extend(loaded.errors)
    admin: list[PolicyRule] = []
    for path in admin_policy_files():
        loaded = files.load(path, Tier.ADMIN)
        admin.extend(loaded.rules)
        errors.extend(loaded.errors)
    rules = [
        *(tool_default_rule(t) for t in tools),
        *(builtin_rules() if builtin is None else builtin),
        *(sandboxed_rules() if sandboxed else ()),
        *user,
        *legacy_rules(allowed_tools=list(allowed_tools), excluded_tools=list(excluded_tools)),
        *always_rules(grants),
        *admin,
    ]
    return PolicySet(rules, errors)


VerdictSource = Literal[
    "policy", "session approval", "always approval", "nobody to ask", "broken policy", "not callable"
]
"""What decided a call: a rule (or no rule), a session approval covering an ASK_USER, an
"always" approval covering where a shell line writes, nobody to ask (SPEC P2), a policy file
that cannot be loaded (fail closed), or a call the runtime refuses before any policy (unknown
or reserved tool, arguments that do not fit its schema)."""


@dataclass(frozen=True, slots=True)
class CallVerdict:
    """What the runtime does with one tool call: ALLOW runs it, ASK_USER waits for a person,
    DENY gives the model ``reason`` as an error result."""

    decision: PolicyDecision
    by: VerdictSource
    reason: str
    result: PolicyResult | None = None
    """The policy engine's answer, when the call got that far."""
    grant: Grant | None = None
    """The approval that covers the call (``by`` is ``session approval`` or ``always approval``)."""

    @property
    def rule(self) -> PolicyRule | None:
        return self.result.rule if self.result is not None else None

    def to_json(self) -> dict[str, Any]:
        """``{"decision", "rule", "reason"}`` as ``policy test --json`` prints it (SPEC §3),
        with ``by`` when something other than the policy decided the call, and ``grant``."""
        doc: dict[str, Any] = {
            "decision": self.decision.value,
            "rule": self.rule.describe() if self.rule is not None else None,
            "reason": self.reason,
        }
        if self.by != "policy":
            doc["by"] = self.by
        if self.grant is not None:
            doc["grant"] = self.grant.grant_id
        return doc


def decide_call(
    engine: PolicyEngine,
    tool_name: str,
    arguments: dict[str, Any],
    *,
    server: str | None = None,
    errors: Sequence[PolicyLoadError] = (),
    grants: Iterable[Grant] = (),
    agent: str | None = None,
    chat_id: str | None = None,
    interactive: bool = True,
    views: Sequence[dict[str, Any]] = (),
    resolve: Resolve | None = None,
) -> CallVerdict:
    """The decision for one call, pure: the rules, then (for ASK_USER) the session approvals of
    ``agent`` in ``chat_id`` and the "always" approvals of a shell line that writes files, then
    whether anybody can be asked. Any load error denies. ``views``: the same call as it really
    runs (``path_views``); the most severe answer counts, and a session approval must cover
    each of them too. ``resolve``: where a shell line's redirections write (without it, no
    approval covers a line that writes files)."""
    if errors:  # fail closed: a broken policy file must not silently drop a deny rule
        return CallVerdict(
            PolicyDecision.DENY,
            "broken policy",
            f"the policy cannot be loaded ({errors[0]}); fix it before tools can run",
        )
    result = most_severe(
        lambda args: engine.evaluate(tool_name, args, server, non_interactive=False), arguments, views
    )
    match result.decision:
        case PolicyDecision.ALLOW:
            return CallVerdict(PolicyDecision.ALLOW, "policy", result.reason, result)
        case PolicyDecision.DENY:
            rule = result.rule
            message = rule.deny_message if rule is not None and rule.deny_message else None
            reason = message or f"{tool_name} is denied by policy ({_explain(result)})"
            return CallVerdict(PolicyDecision.DENY, "policy", reason, result)
    if agent is not None and chat_id is not None and not could_be_denied(result.decision, result.rule):
        session = [g for g in grants if g.scope == "session"]
        grant = find_covering_grant(session, tool_name, arguments, agent=agent, chat_id=chat_id, resolve=resolve)
        if grant is not None and all(
            find_covering_grant(session, tool_name, v, agent=agent, chat_id=chat_id) for v in views
        ):
            reason = f"covered by the session approval {grant.grant_id}"
            return CallVerdict(PolicyDecision.ALLOW, "session approval", reason, result, grant)
    if not could_be_denied(result.decision, result.rule):
        grant = _always_covers_writes(engine, tool_name, arguments, server, grants, resolve)
        if grant is not None:
            reason = f"writes only what the \"always\" approval {grant.grant_id} saw written"
            return CallVerdict(PolicyDecision.ALLOW, "always approval", reason, result, grant)
    if not interactive:
        reason = f"{tool_name} needs a person's approval, and nobody can be asked in this run"
        return CallVerdict(PolicyDecision.DENY, "nobody to ask", reason, result)
    return CallVerdict(PolicyDecision.ASK_USER, "policy", result.reason, result)


def _always_covers_writes(
    engine: PolicyEngine,
    tool_name: str,
    arguments: dict[str, Any],
    server: str | None,
    grants: Iterable[Grant],
    resolve: Resolve | None,
) -> Grant | None:
    """The "always" approval that covers an asked shell line that writes files: every target
    is one the person saw written, and the same line writing nowhere is ALLOWed by the rules
    (an "always" rule asks about every write, as it cannot place a path, SPEC C3, P6)."""
    if tool_name != SHELL_TOOL or resolve is None:
        return None
    always = [g for g in grants if g.scope == "always" and g.redirect_targets]
    quiet = without_writes(arguments) if always else None
    if quiet is None:
        return None
    grant = find_covering_grant(always, tool_name, arguments, agent="", chat_id="", resolve=resolve)
    if grant is None:
        return None
    if engine.evaluate(tool_name, quiet, server, non_interactive=False).decision is not PolicyDecision.ALLOW:
        return None
    return grant


def callable_tool(
    registry: ToolRegistry, tool_name: str, arguments: dict[str, Any]
) -> Tool | CallVerdict:
    """The tool a call names, or the error result the runtime gives it before any policy (as
    ``runtime/tool_calls.py`` does): a reserved or unknown tool, or arguments that do not fit
    the tool's schema."""
    tool = named_tool(registry, tool_name)
    if isinstance(tool, Tool):
        problem = schema_problem(tool, arguments)
        if problem is None:
            return tool
        return CallVerdict(PolicyDecision.DENY, "not callable", problem)
    return CallVerdict(PolicyDecision.DENY, "not callable", tool)


def named_tool(registry: ToolRegistry, tool_name: str) -> Tool | str:
    """The tool a call names, or why there is none: only the system injects ``client.*``
    calls (SPEC A8), and a name the registry does not hold is unknown."""
    if tool_name.startswith(CLIENT_PREFIX):
        return f"tool {tool_name!r} is reserved for the client and cannot be called"
    tool = registry.get(tool_name)
    return tool if tool is not None else f"unknown tool {tool_name!r}"


def schema_problem(tool: Tool, arguments: dict[str, Any]) -> str | None:
    """What the model must fix in its arguments for ``tool``, or None when they fit."""
    try:
        validate_arguments(arguments, tool.parameters)
    except ArgumentError as exc:
        return f"{tool.name}: {exc}"
    return None


ENGINES_KEPT = 32
"""Engines a ``PolicyAuthorizer`` keeps for reuse (``engine_for``); the oldest goes first."""


class _KeptEngine:
    """An engine built by ``engine_for``, with the objects its key names by identity: holding
    them keeps their ids from being reused by other objects while the entry lives."""

    __slots__ = ("engine", "errors", "held")

    def __init__(self, engine: PolicyEngine, errors: list[PolicyLoadError], held: tuple[object, ...]) -> None:
        self.engine = engine
        self.errors = errors
        self.held = held


class PolicyAuthorizer:
    """The runtime's ``Authorizer``, and the same evaluation for ``policy test`` / ``policy list``."""

    def __init__(self, storage: SQLStorage, *, files: PolicyFiles | None = None) -> None:
        self._storage = storage
        self._files = files or PolicyFiles()
        self._builtin: Sequence[PolicyRule] | None = None
        """The shipped rules, parsed at the first call that needs them."""
        self._engines: dict[tuple[object, ...], _KeptEngine] = {}
        """Engines already built, by everything they are built from (``engine_for``)."""
        self._always: tuple[Sequence[Grant], tuple[str, ...]] = ((), ())
        """The last grants seen and the ids of their "always" grants: a batch's calls are
        authorized with one tuple of grants, so it is walked once per batch."""

    async def engine_for(
        self,
        world: World,
        tools: Iterable[Tool] | None = None,
        *,
        extra_files: Sequence[str] = (),
        mode: str | None = None,
        grants: Sequence[Grant] | None = None,
    ) -> tuple[PolicyEngine, list[PolicyLoadError], Sequence[Grant]]:
        """The world's engine: defaults of ``tools``, every tier, ``extra_files`` at tier 2
        after the world's own, and the world's mode unless ``mode`` is given; ``grants`` in
        force, read here unless given.

        Everything it is built from is read afresh on every call -- the world's settings and
        grants (by the caller), each policy file's state on disk (``PolicyFiles`` re-reads a
        file whose mtime or size changed, making a new object), ``$AGENTWORLD_ADMIN_POLICY``
        -- and an engine built from the very same inputs is reused: building one (the tiers
        put together, the rules sorted, the pattern set) was a third of authorizing a call.
        The inputs are the key: settings by value, the tools and loaded files by identity
        (the entry holds them), grants by id ("always" grants only: the others make no rule,
        and a grant never changes once made; revoked, it is no longer in force)."""
        if grants is None:
            grants = await self._storage.approvals.grants(world.name)
        sandboxed = await sandbox_active(world)
        return (*self._engine(world, tuple(tools or ()), extra_files, mode, grants, sandboxed), grants)

    def _engine(
        self,
        world: World,
        tools: tuple[Tool, ...],
        extra_files: Sequence[str],
        mode: str | None,
        grants: Sequence[Grant],
        sandboxed: bool,
    ) -> tuple[PolicyEngine, list[PolicyLoadError]]:
        """``engine_for`` once the grants and the sandbox's state are in hand."""
        from agentworld.policy.engine import PolicyEngine
        from agentworld.policy.loader import builtin_rules

        if self._builtin is None:
            self._builtin = builtin_rules()
        if self._always[0] is grants:  # the same tuple as the batch's last call
            always = self._always[1]
        else:
            always = tuple(g.grant_id for g in grants if g.scope == "always")
            if isinstance(grants, tuple):  # a list could change under the same identity
                self._always = (grants, always)
        user_files = (*world.policy_files, *extra_files)
        admin_files = admin_policy_files()
        sources = (
            *tools,
            *(self._files.load(path, Tier.USER) for path in user_files),
            *(self._files.load(path, Tier.ADMIN) for path in admin_files),
        )
        key = (
            world.name,
            mode or world.policy_mode,
            json.dumps(world.policy_rules, sort_keys=True) if world.policy_rules else "",
            tuple(world.allowed_tools),
            tuple(world.excluded_tools),
            user_files,
            tuple(admin_files),
            tuple(map(id, sources)),
            always,
            sandboxed,
        )
        kept = self._engines.get(key)
        if kept is None:
            loaded = load_rules(
                self._files,
                tools=tools,
                builtin=self._builtin,
                world_rules=world.policy_rules,
                user_files=user_files,
                allowed_tools=world.allowed_tools,
                excluded_tools=world.excluded_tools,
                grants=grants,
                sandboxed=sandboxed,
            )
            engine = PolicyEngine(loaded.rules, mode=mode or world.policy_mode, sandboxed=sandboxed)
            kept = _KeptEngine(engine, loaded.errors, sources)
            if len(self._engines) >= ENGINES_KEPT:
                del self._engines[next(iter(self._engines))]
            self._engines[key] = kept
        return kept.engine, kept.errors

    async def evaluate(
        self,
        world: World,
        tool: Tool,
        arguments: dict[str, Any],
        *,
        server: str | None = None,
        extra_files: Sequence[str] = (),
        mode: str | None = None,
        agent: str | None = None,
        chat_id: str | None = None,
        interactive: bool = True,
        grants: Sequence[Grant] | None = None,
        approved: bool = False,
    ) -> CallVerdict:
        """The decision for a call of ``tool`` in ``world`` — what ``authorize`` acts on.

        ``server`` is the MCP server the call claims (default: the tool's own, as in the
        runtime); ``agent`` and ``chat_id`` bring in that agent's session approvals there;
        ``grants``: those in force, when the caller has just read them; ``approved``: a person
        has approved this very call, so ASK_USER stays ASK_USER even where nobody can be asked
        (only a DENY in force refuses it, SPEC C3).
        """
        if grants is None:
            grants = await self._storage.approvals.grants(world.name)
        engine, errors = self._engine(world, (tool,), extra_files, mode, grants, await sandbox_active(world))
        return decide_call(
            engine,
            tool.name,
            arguments,
            server=server or tool.server,
            errors=errors,
            grants=grants,
            agent=agent,
            chat_id=chat_id,
            interactive=approved or (interactive and not world.non_interactive),
            views=resolved_views(tool, arguments, world.working_dir),
            resolve=redirect_resolver(arguments, world.working_dir) if tool.name == SHELL_TOOL else None,
        )

    async def authorize(
        self, tool: Tool, arguments: dict[str, Any], context: ToolContext
    ) -> Decision:
        # The state the runtime read with the batch, else read now; either way fresh for
        # this call (another process may have changed a setting or revoked a grant).
        state = context.policy
        if state is None or state.world.name != context.world:
            state = PolicyState(
                await self._storage.get_world(context.world),
                tuple(await self._storage.approvals.grants(context.world)),
            )
        verdict = await self.evaluate(
            state.world,
            tool,
            arguments,
            agent=context.agent,
            chat_id=context.chat_id,
            interactive=context.interactive,
            grants=state.grants,
            approved=context.approval_id is not None,
        )
        match verdict.decision:
            case PolicyDecision.ALLOW:
                if verdict.result is not None and verdict.by == "policy":
                    return Allow(_explain(verdict.result))
                return Allow(verdict.reason)
            case PolicyDecision.DENY:
                if verdict.result is not None and verdict.by in ("policy", "nobody to ask"):
                    # A rule's denial, and the automatic one when nobody can be asked: both
                    # are decisions an auditor must see, like a person's.
                    await self._audit_denial(tool, arguments, context, verdict)
                return Deny(verdict.reason, by="nobody to ask" if verdict.by == "nobody to ask" else "policy")
            case PolicyDecision.ASK_USER:
                return AskUser(tool.approval.message or "")

    async def _audit_denial(
        self, tool: Tool, arguments: dict[str, Any], context: ToolContext, verdict: CallVerdict
    ) -> None:
        assert verdict.result is not None
        automatic = verdict.by == "nobody to ask"
        detail = verdict.result.to_json()
        if automatic:
            detail["reason"] = verdict.reason
        if context.approval_id is not None:
            # A call a person approved, refused by the policy in force when it was to run, or
            # as they answered, when they corrected it (SPEC F2).
            detail["when"] = "answer" if context.correcting else "run"
        await self._storage.approvals.audit(
            context.world,
            AuditEntry(
                event="policy",
                actor="non-interactive" if automatic else "policy",
                approval_id=context.approval_id,
                agent=context.agent,
                chat_id=context.chat_id,
                tool_name=tool.name,
                tool_args=redact(arguments),
                decision="deny",
                detail=detail,
            ),
        )


async def sandbox_active(world: World) -> bool:
    """Whether the world's shell commands run in an active sandbox (``tools.sandbox``): the
    read-only commands of ``sandboxed_defaults.toml`` are allowed then, and a script names
    what it may run. Bubblewrap is probed once per process, in a thread: it starts one."""
    from agentworld.tools.sandbox import bubblewrap_problem

    if world.sandbox != "off" and bubblewrap_problem.cache_info().currsize == 0:
        await asyncio.to_thread(bubblewrap_problem)
    return _sandbox_active(world.sandbox, world.network, world.working_dir)


@functools.lru_cache(maxsize=64)
def _sandbox_active(mode: SandboxMode, network: NetworkMode, working_dir: str | None) -> bool:
    """``sandbox_status(...).active``, kept: it resolves the working directory's real path on
    every call, and the answer depends on the settings and the once-probed bubblewrap only."""
    from agentworld.tools.sandbox import sandbox_status

    return sandbox_status(mode, network, working_dir).active


def _explain(result: PolicyResult) -> str:
    rule = result.rule
    if rule is None:
        return result.reason or "the default decision"
    where = rule.source + (f" rule {rule.index + 1}" if rule.index is not None else "")
    return f"{rule.name or 'rule'} from {where}" + (f": {result.reason}" if result.reason else "")
