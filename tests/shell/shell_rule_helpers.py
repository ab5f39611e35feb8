"""What the shell tests ask of a line: how the reader sees its first command, and what a world
whose only rule allows the line's program decides about it."""

from __future__ import annotations

from typing import Any

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision, Tier
from agentworld.shell.commands import analyze


def first(line: str) -> tuple[str, bool]:
    """The first command's opacity and whether it redirects output."""
    part = analyze(line).parts[0]
    return part.opacity, part.redirects_output


def engine_allowing(line: str, *, redirection: bool = False) -> PolicyEngine:
    """A world whose only rule allows the line's program (``commandPrefix = [PROGRAM]``)."""
    program = line.split()[0]
    text = f"""
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["{program}"]
decision = "allow"
allowRedirection = {str(redirection).lower()}
priority = 100
"""
    loaded = load_policy_text(text, source="world.toml", tier=Tier.USER)
    assert loaded.errors == []
    return PolicyEngine(loaded.rules)


def decide(line: str, *, redirection: bool = False, **kw: Any) -> PolicyDecision:
    """What that world decides about ``line``."""
    return engine_allowing(line, redirection=redirection).evaluate("shell_cmd", {"command": line}, **kw).decision


def engine_with_prefixes(*prefixes: str) -> PolicyEngine:
    """A world whose only rule allows the shell lines starting with ``prefixes``."""
    text = f"""
[[rule]]
toolName = "shell_cmd"
commandPrefix = {list(prefixes)!r}
decision = "allow"
priority = 100
"""
    loaded = load_policy_text(text.replace("'", '"'), source="policy.toml", tier=Tier.USER)
    assert loaded.errors == []
    return PolicyEngine(loaded.rules)


def decide_under_prefixes(
    prefixes: tuple[str, ...], arguments: dict[str, Any], *, strict: bool = False
) -> PolicyDecision:
    """What that world decides about a ``shell_cmd`` call (``strict``: no person to ask)."""
    return engine_with_prefixes(*prefixes).evaluate("shell_cmd", arguments, non_interactive=strict).decision
