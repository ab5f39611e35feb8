"""Loading policy rules from TOML (SPEC P3), strictly.

A file is an array of ``[[rule]]`` tables. Unknown keys are errors, not silently
dropped: a misspelt ``argsPatern`` would otherwise turn a narrow rule into a
blanket one. Every problem is collected with its type, file and rule, so one
bad rule is reported precisely while the others still load.
"""

from __future__ import annotations

import functools
import shlex
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

import re2
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from agentworld.policy.nested_quantifiers import nested_quantifier
from agentworld.policy.path_prefix import PATH_TOOLS, normal_prefix
from agentworld.policy.rules import (
    CompiledPattern,
    PolicyDecision,
    PolicyRule,
    Tier,
    parse_tool_selector,
)
from agentworld.shell import SHELL_TOOL

ErrorType = Literal[
    "file_read", "toml_parse", "schema_validation", "rule_validation", "regex_compilation"
]
MAX_PATTERN = 1024


@dataclass(frozen=True)
class PolicyLoadError:
    type: ErrorType
    file: str
    rule: int | None
    """0-based index of the ``[[rule]]`` table, when the problem is in one."""
    message: str
    key: str | None = None
    """The rule's key the problem is about, when one is (``argsPattern``, ``decision``)."""

    def __str__(self) -> str:
        """The problem as a person reads it: rules are numbered from 1, as a file lists them."""
        where = f"{self.file}" + (f", rule {self.rule + 1}" if self.rule is not None else "")
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
    pathPrefix: str | list[str] | None = None
    decision: Literal["allow", "deny", "ask_user"]
    priority: StrictInt = Field(ge=0, le=999)
    modes: list[Literal["default", "auto_edit", "yolo"]] | None = None
    allowRedirection: StrictBool = False
    denyMessage: str | None = None
    name: str | None = None


RULE_KEYS: tuple[str, ...] = ("name", *(key for key in _RuleSchema.model_fields if key != "name"))
"""A rule's keys, in the order a rule is written (``agentworld export``): its name first."""


def _re2_options() -> re2.Options:
    options = re2.Options()
    # RE2 would also log every refused pattern to stderr; the error we raise says it once.
    options.log_errors = False
    return options


RE2_OPTIONS = _re2_options()
_OPTIONS = RE2_OPTIONS


def compile_pattern(pattern: str, *, allow_nested: bool = False) -> CompiledPattern:
    """Compile a policy regex with RE2, whose matching time is linear in the text (SPEC P3).

    RE2 has no backtracking, so no pattern can hang the engine; the price is that
    backreferences and lookaround, which need backtracking, are refused. Nested quantifiers
    (``(a+)+``) are refused too, as SPEC P3 asks, although RE2 runs them in linear time
    (``nested_quantifiers.py`` says why). ``allow_nested`` is for patterns this package
    builds itself from escaped text (``grant_rules.py``), never for a pattern a person wrote.
    """
    if len(pattern) > MAX_PATTERN:
        raise ValueError(f"pattern is {len(pattern)} characters long (limit {MAX_PATTERN})")
    try:
        compiled: CompiledPattern = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        # RE2 quotes the offending part raw; errors are printed on one line.
        reason = str(reason).replace("\r", "\\r").replace("\n", "\\n")
        hint = (
            " (RE2 has no backreferences or lookaround)"
            if "invalid perl operator" in reason or "invalid escape sequence" in reason
            else ""
        )
        raise ValueError(f"pattern {pattern!r} is not a valid regex: {reason}{hint}") from None
    # Checked on a pattern RE2 has accepted, so the scanner only ever reads valid syntax.
    nested = None if allow_nested else nested_quantifier(pattern)
    if nested is not None:
        raise ValueError(
            f"pattern {pattern!r} nests quantifiers in {nested!r} (a repeated group whose body "
            "repeats): refused as a catastrophic regex"
        )
    return compiled


def _schema_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "rule"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _tool_selectors(rule: _RuleSchema) -> list[tuple[str | None, str | None]]:
    """``(tool_name, tool_prefix)`` for each rule the table becomes (one per ``toolName``)."""
    if rule.mcpName is not None and (not rule.mcpName or "*" in rule.mcpName):
        raise _RuleProblem(
            "rule_validation",
            f"mcpName {rule.mcpName!r} must be a server name (no '*'; leave out toolName "
            "for every tool of the server)",
            "mcpName",
        )
    names: list[str | None] = (
        [rule.toolName] if isinstance(rule.toolName, str) else list(rule.toolName or []) or [None]
    )
    if rule.mcpName is not None:
        names = [f"{rule.mcpName}__{n if n is not None else '*'}" for n in names]
    try:
        return [parse_tool_selector(n) for n in names]
    except ValueError as exc:
        raise _RuleProblem("rule_validation", str(exc), "toolName") from None


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
        raise _RuleProblem("rule_validation", "toolName must not be an empty list", "toolName")
    selectors = _tool_selectors(rule)
    shell_only = rule.commandPrefix is not None or rule.commandRegex is not None
    if shell_only:
        # Command criteria read a parsed shell command line; only `shell_cmd` (named, "*" or
        # left out) has one.
        every_tool = {(None, None), (None, ""), (SHELL_TOOL, None)}
        if rule.mcpName is not None or not set(selectors) <= every_tool:
            raise _RuleProblem(
                "rule_validation", f"commandPrefix/commandRegex apply to {SHELL_TOOL} only", "toolName"
            )
        selectors = [(SHELL_TOOL, None)]
    path_prefixes = _path_prefixes(rule, selectors)
    try:
        args_pattern = compile_pattern(rule.argsPattern) if rule.argsPattern is not None else None
    except ValueError as exc:
        raise _RuleProblem("regex_compilation", str(exc), "argsPattern") from None
    try:
        command_regex = (
            compile_pattern(rule.commandRegex) if rule.commandRegex is not None else None
        )
    except ValueError as exc:
        raise _RuleProblem("regex_compilation", str(exc), "commandRegex") from None
    prefixes: tuple[str, ...] | None = None
    if rule.commandPrefix is not None:
        prefixes = (
            (rule.commandPrefix,)
            if isinstance(rule.commandPrefix, str)
            else tuple(rule.commandPrefix)
        )
        if not prefixes or any(not p.strip() for p in prefixes):
            raise _RuleProblem("rule_validation", "commandPrefix must not be empty", "commandPrefix")
        for prefix in prefixes:  # matched as shell words, so it must split like one
            try:
                shlex.split(prefix)
            except ValueError as exc:
                raise _RuleProblem(
                    "rule_validation", f"commandPrefix {prefix!r} is not valid shell: {exc}", "commandPrefix"
                ) from None
    return [
        PolicyRule(
            decision=PolicyDecision(rule.decision.upper()),
            priority=tier + rule.priority / 1000,
            tool_name=tool,
            tool_prefix=tool_prefix,
            args_pattern=args_pattern,
            command_prefixes=prefixes,
            command_regex=command_regex,
            path_prefixes=path_prefixes,
            modes=frozenset(rule.modes) if rule.modes is not None else None,
            allow_redirection=rule.allowRedirection,
            deny_message=rule.denyMessage,
            name=rule.name,
            source=source,
            index=index,
        )
        for tool, tool_prefix in selectors
    ]


def _path_prefixes(rule: _RuleSchema, selectors: list[tuple[str | None, str | None]]) -> tuple[str, ...] | None:
    """A rule's ``pathPrefix`` normalised; refused unless every tool it names is a file tool."""
    if rule.pathPrefix is None:
        return None
    tools = ", ".join(sorted(PATH_TOOLS))
    if rule.mcpName is not None or any(prefix is not None or name not in PATH_TOOLS for name, prefix in selectors):
        raise _RuleProblem("rule_validation", f"pathPrefix applies to file tools only: name them in toolName ({tools})", "pathPrefix")
    given = [rule.pathPrefix] if isinstance(rule.pathPrefix, str) else rule.pathPrefix
    if not given:
        raise _RuleProblem("rule_validation", "pathPrefix must not be an empty list", "pathPrefix")
    try:
        return tuple(normal_prefix(prefix) for prefix in given)
    except ValueError as exc:
        raise _RuleProblem("rule_validation", str(exc), "pathPrefix") from None


class _RuleProblem(Exception):
    def __init__(self, type: ErrorType, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.type = type
        self.key = key


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
    loaded = load_policy_tables(tables, source=source, tier=tier)
    return PolicySet(loaded.rules, errors + loaded.errors)


def load_policy_tables(tables: Sequence[object], *, source: str, tier: int = Tier.USER) -> PolicySet:
    """Rules from their tables as a policy file's ``[[rule]]`` holds them: the one reader of a
    rule, for policy files and for the rules a world holds itself (``policyRules``)."""
    errors: list[PolicyLoadError] = []
    rules: list[PolicyRule] = []
    for index, table in enumerate(tables):
        try:
            schema = _RuleSchema.model_validate(table)
        except ValidationError as exc:
            first = exc.errors()[0]["loc"] if exc.errors() else ()
            key = str(first[0]) if first else None
            errors.append(PolicyLoadError("schema_validation", source, index, _schema_message(exc), key))
            continue
        try:
            rules.extend(_build(schema, source=source, index=index, tier=tier))
        except _RuleProblem as problem:
            errors.append(PolicyLoadError(problem.type, source, index, str(problem), problem.key))
    return PolicySet(rules, errors)


def load_policy_file(path: str | Path, *, tier: int = Tier.USER) -> PolicySet:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return PolicySet([], [PolicyLoadError("file_read", str(path), None, str(exc))])
    return load_policy_text(text, source=str(path), tier=tier)


def builtin_rules() -> list[PolicyRule]:
    """The tier-1 defaults shipped with the package (``policy/defaults.toml``)."""
    return _shipped("defaults.toml", "built-in defaults")


@functools.cache
def sandboxed_rules() -> tuple[PolicyRule, ...]:
    """The tier-1 rules for a world whose commands run in an active sandbox
    (``policy/sandboxed_defaults.toml``): read-only commands allowed without asking. Parsed
    once: the rules are immutable."""
    return tuple(_shipped("sandboxed_defaults.toml", "built-in sandboxed defaults"))


def _shipped(name: str, source: str) -> list[PolicyRule]:
    text = resources.files("agentworld.policy").joinpath(name).read_text(encoding="utf-8")
    loaded = load_policy_text(text, source=source, tier=Tier.BUILTIN)
    if loaded.errors:  # a broken shipped file is a bug in this package, never the user's input
        raise RuntimeError("; ".join(str(e) for e in loaded.errors))
    return loaded.rules


def legacy_rules(*, allowed_tools: list[str], excluded_tools: list[str]) -> list[PolicyRule]:
    """SPEC P5: allowed tools → ALLOW at 2.3, excluded tools → DENY at 2.4.

    Names take the wildcards of ``toolName`` (``*``, ``read_*``); the world settings refuse
    a misplaced star before they are stored (``models.domain``).
    """
    return [
        *(_legacy(PolicyDecision.ALLOW, 2.3, t, "allowed tools") for t in allowed_tools),
        *(_legacy(PolicyDecision.DENY, 2.4, t, "excluded tools") for t in excluded_tools),
    ]


def _legacy(decision: PolicyDecision, priority: float, tool: str, source: str) -> PolicyRule:
    name, prefix = parse_tool_selector(tool)
    return PolicyRule(decision, priority, tool_name=name, tool_prefix=prefix, source=source)
