"""Loading policy rules from TOML (SPEC P3), strictly.

A file is an array of ``[[rule]]`` tables. Unknown keys are errors, not silently
dropped: a misspelt ``argsPatern`` would otherwise turn a narrow rule into a
blanket one. Every problem is collected with its type, file and rule, so one
bad rule is reported precisely while the others still load.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from agentworld.policy.rules import PolicyDecision, PolicyRule, Tier

ErrorType = Literal[
    "file_read", "toml_parse", "schema_validation", "rule_validation", "regex_compilation"
]
MAX_PATTERN = 1024
SHELL_TOOL = "shell_cmd"

# A quantified group that itself contains a quantifier: (a+)+, (\w*x)*, (.+){2,} — the shapes
# that backtrack exponentially. A heuristic, on purpose conservative.
_NESTED_QUANTIFIER = re.compile(
    r"\((?:[^()\\]|\\.)*(?:[+*]|\{\d+,?\d*\})(?:[^()\\]|\\.)*\)(?:[+*]|\{\d+,?\d*\})"
)
_INNERMOST_GROUP = re.compile(r"\((?:[^()\\]|\\.)*\)")
_QUANTIFIER = re.compile(r"[+*]|\{\d+,?\d*\}")


@dataclass(frozen=True)
class PolicyLoadError:
    type: ErrorType
    file: str
    rule: int | None
    """0-based index of the ``[[rule]]`` table, when the problem is in one."""
    message: str

    def __str__(self) -> str:
        where = f"{self.file}" + (f", rule {self.rule}" if self.rule is not None else "")
        return f"{where}: {self.type}: {self.message}"


@dataclass
class PolicySet:
    rules: list[PolicyRule]
    errors: list[PolicyLoadError]


class _RuleSchema(BaseModel):
    model_config = ConfigDict(extra="forbid")

    toolName: str | list[str] | None = None
    mcpName: str | None = None
    argsPattern: str | None = None
    commandPrefix: str | list[str] | None = None
    commandRegex: str | None = None
    decision: Literal["allow", "deny", "ask_user"]
    priority: StrictInt = Field(ge=0, le=999)
    modes: list[Literal["default", "auto_edit", "yolo"]] | None = None
    allowRedirection: StrictBool = False
    denyMessage: str | None = None
    name: str | None = None


def _nests_quantifiers(pattern: str) -> bool:
    # Fold each innermost group into a stand-in atom ("a+" when it repeats inside, else "a") until
    # none is left, so groups around groups are checked too: ((a+))+ -> (a+)+ is refused.
    while not _NESTED_QUANTIFIER.search(pattern):
        folded = _INNERMOST_GROUP.sub(
            lambda m: "a+" if _QUANTIFIER.search(re.sub(r"\\.", "", m[0])) else "a", pattern
        )
        if folded == pattern:
            return False
        pattern = folded
    return True


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a policy regex, refusing the ones that could hang the engine."""
    if len(pattern) > MAX_PATTERN:
        raise ValueError(f"pattern is {len(pattern)} characters long (limit {MAX_PATTERN})")
    if _nests_quantifiers(pattern):
        raise ValueError(f"pattern {pattern!r} nests quantifiers (catastrophic backtracking)")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"pattern {pattern!r} is not a valid regex: {exc}") from None


def _schema_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "rule"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _tool_names(rule: _RuleSchema) -> list[str | None]:
    names: list[str | None] = (
        [rule.toolName] if isinstance(rule.toolName, str) else list(rule.toolName or []) or [None]
    )
    if rule.mcpName is not None:
        return [f"{rule.mcpName}__{n}" if n else f"{rule.mcpName}__*" for n in names]
    return names


def _build(rule: _RuleSchema, *, source: str, index: int, tier: int) -> list[PolicyRule]:
    criteria = [
        c for c in (rule.argsPattern, rule.commandPrefix, rule.commandRegex) if c is not None
    ]
    if len(criteria) > 1:
        raise _RuleProblem(
            "rule_validation", "argsPattern, commandPrefix and commandRegex cannot be combined"
        )
    if isinstance(rule.toolName, list) and not rule.toolName:
        # An empty list would otherwise become a rule for every tool.
        raise _RuleProblem("rule_validation", "toolName must not be an empty list")
    names = _tool_names(rule)
    shell_only = rule.commandPrefix is not None or rule.commandRegex is not None
    if shell_only:
        if any(n not in (None, SHELL_TOOL) for n in names) or rule.mcpName is not None:
            raise _RuleProblem(
                "rule_validation", f"commandPrefix/commandRegex apply to {SHELL_TOOL} only"
            )
        names = [SHELL_TOOL]
    try:
        args_pattern = compile_pattern(rule.argsPattern) if rule.argsPattern is not None else None
        command_regex = (
            compile_pattern(rule.commandRegex) if rule.commandRegex is not None else None
        )
    except ValueError as exc:
        raise _RuleProblem("regex_compilation", str(exc)) from None
    prefixes: tuple[str, ...] | None = None
    if rule.commandPrefix is not None:
        prefixes = (
            (rule.commandPrefix,)
            if isinstance(rule.commandPrefix, str)
            else tuple(rule.commandPrefix)
        )
        if not prefixes or any(not p.strip() for p in prefixes):
            raise _RuleProblem("rule_validation", "commandPrefix must not be empty")
        for prefix in prefixes:  # matched as shell words, so it must split like one
            try:
                shlex.split(prefix)
            except ValueError as exc:
                raise _RuleProblem(
                    "rule_validation", f"commandPrefix {prefix!r} is not valid shell: {exc}"
                ) from None
    return [
        PolicyRule(
            decision=PolicyDecision(rule.decision.upper()),
            priority=tier + rule.priority / 1000,
            tool_name=name,
            args_pattern=args_pattern,
            command_prefixes=prefixes,
            command_regex=command_regex,
            modes=frozenset(rule.modes) if rule.modes is not None else None,
            allow_redirection=rule.allowRedirection,
            deny_message=rule.denyMessage,
            name=rule.name,
            source=source,
            index=index,
        )
        for name in names
    ]


class _RuleProblem(Exception):
    def __init__(self, type: ErrorType, message: str) -> None:
        super().__init__(message)
        self.type = type


def load_policy_text(text: str, *, source: str, tier: int = Tier.USER) -> PolicySet:
    errors: list[PolicyLoadError] = []
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return PolicySet([], [PolicyLoadError("toml_parse", source, None, str(exc))])
    unknown = sorted(set(document) - {"rule"})
    if unknown:
        errors.append(
            PolicyLoadError(
                "schema_validation", source, None, f"unknown top-level keys: {', '.join(unknown)}"
            )
        )
    tables = document.get("rule", [])
    if not isinstance(tables, list):
        errors.append(
            PolicyLoadError(
                "schema_validation", source, None, "'rule' must be an array of tables ([[rule]])"
            )
        )
        return PolicySet([], errors)
    rules: list[PolicyRule] = []
    for index, table in enumerate(tables):
        try:
            schema = _RuleSchema.model_validate(table)
        except ValidationError as exc:
            errors.append(PolicyLoadError("schema_validation", source, index, _schema_message(exc)))
            continue
        try:
            rules.extend(_build(schema, source=source, index=index, tier=tier))
        except _RuleProblem as problem:
            errors.append(PolicyLoadError(problem.type, source, index, str(problem)))
    return PolicySet(rules, errors)


def load_policy_file(path: str | Path, *, tier: int = Tier.USER) -> PolicySet:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return PolicySet([], [PolicyLoadError("file_read", str(path), None, str(exc))])
    return load_policy_text(text, source=str(path), tier=tier)


def builtin_rules() -> list[PolicyRule]:
    """The tier-1 defaults shipped with the package (``policy/defaults.toml``)."""
    text = (
        resources.files("agentworld.policy").joinpath("defaults.toml").read_text(encoding="utf-8")
    )
    loaded = load_policy_text(text, source="built-in defaults", tier=Tier.BUILTIN)
    if loaded.errors:  # a broken shipped file is a bug in this package, never the user's input
        raise RuntimeError("; ".join(str(e) for e in loaded.errors))
    return loaded.rules


def legacy_rules(*, allowed_tools: list[str], excluded_tools: list[str]) -> list[PolicyRule]:
    """SPEC P5: allowed tools → ALLOW at 2.3, excluded tools → DENY at 2.4."""
    return [
        *(
            PolicyRule(PolicyDecision.ALLOW, 2.3, tool_name=t, source="allowed tools")
            for t in allowed_tools
        ),
        *(
            PolicyRule(PolicyDecision.DENY, 2.4, tool_name=t, source="excluded tools")
            for t in excluded_tools
        ),
    ]
