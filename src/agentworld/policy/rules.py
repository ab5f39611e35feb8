"""Policy rules and decisions as data (SPEC P1, P3, P5)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from agentworld.models.settings import parse_tool_selector as parse_tool_selector


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


class PatternMatch(Protocol):
    """Where a pattern was found (``re.Match`` and RE2's match both fit)."""

    def start(self) -> int: ...

    def end(self) -> int: ...


class CompiledPattern(Protocol):
    """A compiled policy regex (``argsPattern``, ``commandRegex``).

    The loader compiles them with RE2 (linear time, SPEC P3); anything with a ``search`` and
    a ``match`` (anchored at the start) that return a match or None, and the source text as
    ``pattern``, fits — ``re.Pattern`` too.
    """

    @property
    def pattern(self) -> str: ...

    def search(self, text: str, pos: int = ..., /) -> PatternMatch | None: ...

    def match(self, text: str, /) -> PatternMatch | None: ...


@dataclass(frozen=True, slots=True)
class PolicyRule:
    decision: PolicyDecision
    priority: float
    """The effective priority (tier + priority/1000)."""
    tool_name: str | None = None
    """The one tool the rule is for, compared exactly; None (and no ``tool_prefix``): every tool."""
    tool_prefix: str | None = None
    """A wildcard from a policy file: every tool whose name starts with this (``""`` for
    ``toolName = "*"``, ``"github__"`` for ``github__*``). Only the loader sets it, so a tool
    whose own name contains ``*`` never turns an exact rule (an "always" grant) into a wildcard."""
    args_pattern: CompiledPattern | None = None
    command_prefixes: tuple[str, ...] | None = None
    command_regex: CompiledPattern | None = None
    path_prefixes: tuple[str, ...] | None = None
    """File tools only: the call's ``path`` must lie inside one of these (normalised, relative
    to the working directory; ``policy/path_prefix.py``)."""
    modes: frozenset[str] | None = None
    allow_redirection: bool = False
    deny_message: str | None = None
    name: str | None = None
    source: str = "built-in"
    """Where the rule comes from: a file path, ``built-in``, ``yolo``, ``always:<grant id>``."""
    index: int | None = None
    """The rule's position in its file (0-based, as JSON's ``index`` gives it); people read it
    numbered from 1 (``number``, "rule 1" is a file's first rule)."""
    from_approval: bool = False
    """An "approve always" answer's rule (``policy/grant_rules.py``): it widens what is asked,
    never what a DENY rule forbids, whatever the DENY rule's priority (SPEC P6)."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def has_command_criteria(self) -> bool:
        return self.command_prefixes is not None or self.command_regex is not None

    def matches_tool(self, tool_name: str) -> bool:
        if self.tool_prefix is not None:
            return tool_name.startswith(self.tool_prefix)
        return self.tool_name is None or self.tool_name == tool_name

    @property
    def tool_selector(self) -> str | None:
        """The tool names as a policy file writes them: ``read_file``, ``github__*``, ``*``."""
        return f"{self.tool_prefix}*" if self.tool_prefix is not None else self.tool_name

    def applies_in(self, mode: str) -> bool:
        return self.modes is None or mode in self.modes

    def describe(self) -> dict[str, Any]:
        """The rule as `policy test` and `policy list` print it."""
        return {
            "name": self.name,
            "decision": self.decision.value,
            "priority": round(self.priority, 3),
            "toolName": self.tool_selector,
            "argsPattern": self.args_pattern.pattern if self.args_pattern else None,
            "commandPrefix": list(self.command_prefixes) if self.command_prefixes else None,
            "commandRegex": self.command_regex.pattern if self.command_regex else None,
            "pathPrefix": list(self.path_prefixes) if self.path_prefixes else None,
            "modes": sorted(self.modes) if self.modes else None,
            "allowRedirection": self.allow_redirection,
            "denyMessage": self.deny_message,
            "source": self.source,
            "index": self.index,
            "number": None if self.index is None else self.index + 1,
        }


def could_be_denied(decision: PolicyDecision, rule: PolicyRule | None) -> bool:
    """An ASK because a DENY rule could match what runs (it cannot be read with certainty):
    a person may allow it once, having seen it, but no remembered approval covers it."""
    return decision is PolicyDecision.ASK_USER and rule is not None and rule.decision is PolicyDecision.DENY
