"""The policy engine (SPEC P1, P2, P4, P5, P8): one decision per tool call, with its rule.

Rules are sorted once, by effective priority (highest first; ties keep load
order), and the first rule that matches decides. ``shell_cmd`` is special: its
command line is parsed into every command a shell would run, each part is
decided on its own, and the parts combine — any DENY denies, else any ASK_USER
asks, and only all-ALLOW allows — so chaining an allowed command with anything
else can never borrow the allowed command's rule (SPEC P4).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.policy.rules import PolicyDecision, PolicyRule, Tier
from agentworld.policy.shell import (
    CommandPart,
    UnparseableCommand,
    command_line,
    matches_prefix,
    matches_regex,
    parse_command,
)
from agentworld.policy.stringify import stable_stringify

SHELL_TOOL = "shell_cmd"
SERVER_SEPARATOR = "__"
YOLO_RULE = PolicyRule(
    decision=PolicyDecision.ALLOW, priority=Tier.BUILTIN + 0.999, source="yolo", name="yolo mode"
)


@dataclass(frozen=True, slots=True)
class PolicyResult:
    decision: PolicyDecision
    rule: PolicyRule | None
    """The rule that decided; None for the default decision and the built-in safety checks."""
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "decision": self.decision.value,
            "rule": self.rule.describe() if self.rule is not None else None,
            "reason": self.reason,
        }


_SEVERITY = {PolicyDecision.ALLOW: 0, PolicyDecision.ASK_USER: 1, PolicyDecision.DENY: 2}


class PolicyEngine:
    def __init__(
        self,
        rules: Iterable[PolicyRule] = (),
        *,
        default: PolicyDecision = PolicyDecision.ASK_USER,
        mode: str = "default",
        non_interactive: bool = False,
    ) -> None:
        ordered = list(rules)
        if mode == "yolo":
            ordered.append(YOLO_RULE)
        # sorted() is stable, so rules of equal priority keep the order they were loaded in.
        self.rules: tuple[PolicyRule, ...] = tuple(
            sorted((r for r in ordered if r.applies_in(mode)), key=lambda r: -r.priority)
        )
        self.default = default
        self.mode = mode
        self.non_interactive = non_interactive

    def evaluate(
        self,
        tool_name: str,
        arguments: dict[str, Any] | None,
        server_name: str | None = None,
        *,
        non_interactive: bool | None = None,
    ) -> PolicyResult:
        result = self._decide(tool_name, arguments or {}, server_name)
        strict = self.non_interactive if non_interactive is None else non_interactive
        if strict and result.decision is PolicyDecision.ASK_USER:  # SPEC P2
            reason = result.reason or "no rule allows it"
            return PolicyResult(PolicyDecision.DENY, result.rule, f"{reason}; nobody can be asked")
        return result

    def _decide(
        self, tool_name: str, arguments: dict[str, Any], server_name: str | None
    ) -> PolicyResult:
        if server_name is not None and not tool_name.startswith(server_name + SERVER_SEPARATOR):
            return PolicyResult(  # SPEC P8: a server vouching for a tool that is not its own
                PolicyDecision.DENY,
                None,
                f"tool {tool_name!r} does not belong to MCP server {server_name!r}",
            )
        if tool_name == SHELL_TOOL:
            return self._decide_shell(arguments)
        serialized: str | None = None
        for rule in self.rules:
            if not rule.matches_tool(tool_name) or rule.has_command_criteria:
                continue
            if rule.args_pattern is not None:
                if not arguments:
                    continue  # a rule with a pattern never matches a call without arguments
                serialized = serialized if serialized is not None else stable_stringify(arguments)
                if not rule.args_pattern.search(serialized):
                    continue
            return PolicyResult(rule.decision, rule)
        return PolicyResult(self.default, None, "no rule matched")

    def _decide_shell(self, arguments: dict[str, Any]) -> PolicyResult:
        command = arguments.get("command")
        parameters = arguments.get("parameters")
        if not isinstance(command, str):
            return PolicyResult(PolicyDecision.ASK_USER, None, "shell_cmd without a command string")
        try:
            parsed = parse_command(
                command_line(command, parameters if isinstance(parameters, list) else None)
            )
        except UnparseableCommand as exc:
            return PolicyResult(
                PolicyDecision.ASK_USER, None, f"the command could not be parsed: {exc}"
            )
        serialized = stable_stringify(arguments)
        # Each part is matched against the call with `command` narrowed to that part (its
        # `parameters` are already folded into its text), so an ALLOW argsPattern that fits
        # one command of a compound line cannot allow the others (SPEC P4).
        others = {k: v for k, v in arguments.items() if k not in ("command", "parameters")}
        outcomes = [self._decide_part(part, others, serialized) for part in parsed.parts]
        if not outcomes:
            return PolicyResult(
                PolicyDecision.ASK_USER, None, "the command runs nothing we can see"
            )
        return max(outcomes, key=lambda r: _SEVERITY[r.decision])  # first of the most severe

    def _decide_part(
        self, part: CommandPart, others: dict[str, Any], serialized: str
    ) -> PolicyResult:
        part_serialized: str | None = None
        for rule in self.rules:
            if not rule.matches_tool(SHELL_TOOL):
                continue
            if rule.args_pattern is not None:
                if part_serialized is None:
                    part_serialized = stable_stringify({**others, "command": part.text})
                # A DENY pattern may also match the whole call: denying more is always safe.
                if not rule.args_pattern.search(part_serialized) and not (
                    rule.decision is PolicyDecision.DENY and rule.args_pattern.search(serialized)
                ):
                    continue
            if rule.command_prefixes is not None and not any(
                matches_prefix(part, prefix) for prefix in rule.command_prefixes
            ):
                continue
            if rule.command_regex is not None and not matches_regex(part, rule.command_regex):
                continue
            if rule.decision is PolicyDecision.ALLOW and part.assignments and self.mode != "yolo":
                # `LD_PRELOAD=x.so ls` is not the `ls` the rule had in mind: a person should look.
                return PolicyResult(PolicyDecision.ASK_USER, rule, f"{part.text!r} sets environment variables")
            if (
                rule.decision is PolicyDecision.ALLOW
                and part.redirects_output
                and not rule.allow_redirection
                and self.mode != "yolo"  # yolo allows everything but explicit DENY rules (P5)
            ):
                return PolicyResult(
                    PolicyDecision.ASK_USER, rule, f"{part.text!r} redirects output to a file"
                )
            return PolicyResult(rule.decision, rule, part.text)
        return PolicyResult(self.default, None, f"no rule matched {part.text!r}")


def merged(*groups: Sequence[PolicyRule]) -> list[PolicyRule]:
    """Concatenate rule groups in load order (the order ties are broken by)."""
    return [rule for group in groups for rule in group]
