"""Policy rules and decisions as data (SPEC P1, P3, P5)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class PolicyDecision(StrEnum):
    ALLOW = "ALLOW"
    DENY = "DENY"
    ASK_USER = "ASK_USER"


class Tier:
    """Effective priority = tier + priority/1000 (SPEC P3)."""

    BUILTIN = 1
    USER = 2
    ADMIN = 3


ALWAYS_ALLOW_PRIORITY = 2.95
"""Where "approve always" answers land (SPEC A5, P6): above user files, below admin files."""

PolicyMode = str
MODES = ("default", "auto_edit", "yolo")


@dataclass(frozen=True, slots=True)
class PolicyRule:
    decision: PolicyDecision
    priority: float
    """The effective priority (tier + priority/1000)."""
    tool_name: str | None = None
    """None matches every tool; ``server__*`` every tool of one MCP server."""
    args_pattern: re.Pattern[str] | None = None
    command_prefixes: tuple[str, ...] | None = None
    command_regex: re.Pattern[str] | None = None
    modes: frozenset[str] | None = None
    allow_redirection: bool = False
    deny_message: str | None = None
    name: str | None = None
    source: str = "built-in"
    """Where the rule comes from: a file path, ``built-in``, ``yolo``, ``always:<grant id>``."""
    index: int | None = None
    """The rule's position in its file (0-based), for messages and `policy test`."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def has_command_criteria(self) -> bool:
        return self.command_prefixes is not None or self.command_regex is not None

    def matches_tool(self, tool_name: str) -> bool:
        if self.tool_name is None:
            return True
        if self.tool_name.endswith("__*"):
            return tool_name.startswith(self.tool_name[:-1])
        return self.tool_name == tool_name

    def applies_in(self, mode: str) -> bool:
        return self.modes is None or mode in self.modes

    def describe(self) -> dict[str, Any]:
        """The rule as `policy test` and `policy list` print it."""
        return {
            "name": self.name,
            "decision": self.decision.value,
            "priority": round(self.priority, 3),
            "toolName": self.tool_name,
            "argsPattern": self.args_pattern.pattern if self.args_pattern else None,
            "commandPrefix": list(self.command_prefixes) if self.command_prefixes else None,
            "commandRegex": self.command_regex.pattern if self.command_regex else None,
            "modes": sorted(self.modes) if self.modes else None,
            "allowRedirection": self.allow_redirection,
            "denyMessage": self.deny_message,
            "source": self.source,
            "index": self.index,
        }
