""""Approve always" answers as policy rules (SPEC A5, P6), for the runtime and the bus alike.

One function turns a remembered grant into its ALLOW rule at priority 2.95, narrowed for
``shell_cmd`` to the approved commands (exact names, see ``approval.grants``), so the agent
runtime and the embedders' confirmation bus can never disagree about what "always" covers.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentworld.approval.grants import SHELL_TOOL, Grant
from agentworld.policy.rules import ALWAYS_ALLOW_PRIORITY, PolicyDecision, PolicyRule


def always_rule(grant: Grant, *, source: str | None = None) -> PolicyRule | None:
    """The ALLOW rule of an "always" grant; None for a shell grant without approved commands."""
    shell = grant.tool_name == SHELL_TOOL
    if grant.scope != "always" or (shell and not grant.roots):
        return None
    return PolicyRule(
        decision=PolicyDecision.ALLOW,
        priority=ALWAYS_ALLOW_PRIORITY,
        tool_name=grant.tool_name,
        command_prefixes=tuple(sorted(grant.roots)) if shell and grant.roots else None,
        allow_redirection=grant.allow_redirection,
        source=source or f"always:{grant.grant_id}",
        name=f"always allow {grant.tool_name}",
    )


def always_rules(grants: Iterable[Grant]) -> list[PolicyRule]:
    """The ALLOW rules of every "always" grant, in order."""
    return [rule for grant in grants if (rule := always_rule(grant)) is not None]
