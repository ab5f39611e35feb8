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
from dataclasses import dataclass, replace
from typing import Any

from agentworld.policy.command_regex import matches_regex, wary_regex_hit
from agentworld.policy.path_prefix import path_within
from agentworld.policy.pattern_set import Matcher, PatternSet
from agentworld.policy.rules import (
    CompiledPattern,
    PolicyDecision,
    PolicyRule,
    Tier,
    could_be_denied,
)
from agentworld.policy.stringify import stable_stringify
from agentworld.shell import SHELL_TOOL
from agentworld.shell.commands import Match, analyze, mentions, prefix_match
from agentworld.shell.data_arguments import takes_data_arguments
from agentworld.shell.directories import joined_paths, moved_into, normal_paths
from agentworld.shell.split import CommandPart, command_line, prefix_words

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
        sandboxed: bool = False,
    ) -> None:
        """``sandboxed``: shell commands run contained (``tools.sandbox``), so a script or
        interpreter that names no denied program is not asked about merely because a
        DENY rule exists (what it could run stays inside the box)."""
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
        self.sandboxed = sandboxed
        self._patterns = PatternSet(r.args_pattern for r in self.rules if r.args_pattern)
        self._approved_tools = frozenset(
            r.tool_name for r in self.rules if r.from_approval and r.tool_name is not None
        )
        """Tools an "approve always" rule is for: their calls are also decided without them."""
        self._approved_commands = tuple(
            prefix_words(prefix)
            for r in self.rules
            if r.from_approval and r.tool_name == SHELL_TOOL
            for prefix in r.command_prefixes or ()
        )
        self._owners: PolicyEngine | None = None
        """The same rules without the "approve always" ones, built when first needed."""

    def evaluate(
        self,
        tool_name: str,
        arguments: dict[str, Any] | None,
        server_name: str | None = None,
        *,
        non_interactive: bool | None = None,
    ) -> PolicyResult:
        result = self._decide(tool_name, arguments or {}, server_name)
        if (
            tool_name in self._approved_tools
            and result.decision is not PolicyDecision.DENY
            and self._approval_may_decide(tool_name, arguments or {})
        ):
            result = self._within_owners_rules(result, tool_name, arguments or {}, server_name)
        strict = self.non_interactive if non_interactive is None else non_interactive
        if strict and result.decision is PolicyDecision.ASK_USER:  # SPEC P2
            reason = result.reason or "no rule allows it"
            return PolicyResult(PolicyDecision.DENY, result.rule, f"{reason}; nobody can be asked")
        return result

    def _approval_may_decide(self, tool_name: str, arguments: dict[str, Any]) -> bool:
        """Whether an "approve always" rule may have decided a part of the call: for a shell
        line, whether a part starts with an approved command (the line's analysis is cached,
        so this is cheap); for any other tool, always."""
        if tool_name != SHELL_TOOL:
            return True
        command, parameters = arguments.get("command"), arguments.get("parameters")
        if not isinstance(command, str) or not (
            parameters is None or (isinstance(parameters, list) and all(isinstance(p, str) for p in parameters))
        ):
            return True
        parts = analyze(command_line(command, parameters)).parts
        return any(
            prefix_match(part, words, by_basename=False) != "no"
            for part in parts
            for words in self._approved_commands
        )

    def _within_owners_rules(
        self, result: PolicyResult, tool_name: str, arguments: dict[str, Any], server_name: str | None
    ) -> PolicyResult:
        """SPEC P6: an "approve always" rule never overrides a DENY rule, whatever either's
        priority. The call is decided again by the owner's rules alone (every rule but those
        answers); a DENY there -- or an ASK because a DENY rule could match -- is the answer,
        else ``result`` stands."""
        if self._owners is None:
            owners = [r for r in self.rules if not r.from_approval and r is not YOLO_RULE]
            self._owners = PolicyEngine(owners, default=self.default, mode=self.mode)
        theirs = self._owners._decide(tool_name, arguments, server_name)
        if theirs.decision is PolicyDecision.DENY or could_be_denied(theirs.decision, theirs.rule):
            return theirs
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
        found: Matcher | None = None
        for rule in self.rules:
            if not rule.matches_tool(tool_name) or rule.has_command_criteria:
                continue
            if rule.path_prefixes is not None and not path_within(tool_name, arguments, rule.path_prefixes):
                continue
            if rule.args_pattern is not None:
                if not arguments:
                    continue  # a rule with a pattern never matches a call without arguments
                found = found or self._patterns.matcher(stable_stringify(arguments))
                if not found(rule.args_pattern):
                    continue
            return PolicyResult(rule.decision, rule)
        return PolicyResult(self.default, None, "no rule matched")

    def _decide_shell(self, arguments: dict[str, Any]) -> PolicyResult:
        command = arguments.get("command")
        parameters = arguments.get("parameters")
        if not isinstance(command, str):
            return PolicyResult(PolicyDecision.ASK_USER, None, "shell_cmd without a command string")
        if parameters is not None and not (
            isinstance(parameters, list) and all(isinstance(p, str) for p in parameters)
        ):
            return PolicyResult(PolicyDecision.ASK_USER, None, "parameters is not a list of strings")
        line = command_line(command, parameters)
        analysis = analyze(line)
        whole = self._patterns.matcher(stable_stringify(arguments))
        # Each part is matched against the call with `command` narrowed to that part (its
        # `parameters` are already folded into its text), so an ALLOW argsPattern that fits
        # one command of a compound line cannot allow the others (SPEC P4).
        others = {k: v for k, v in arguments.items() if k not in ("command", "parameters")}
        # The call's own `directory` is a `cd` before the line: `cat credentials` run in `.aws`
        # opens `.aws/credentials`, which no word of the line spells.
        parts = moved_into(analysis.parts, arguments.get("directory"))
        scope = _Scope(line, self.sandboxed)
        outcomes = [self._decide_part(part, others, whole, scope) for part in parts]
        if not outcomes:
            return PolicyResult(PolicyDecision.ASK_USER, None, f"nothing to run ({analysis.reason})")
        # The first of the most severe; among ASKs, one a DENY rule could decide comes first:
        # no remembered approval may cover it (``could_be_denied``).
        worst = max(outcomes, key=lambda r: (_SEVERITY[r.decision], could_be_denied(r.decision, r.rule)))
        if not analysis.understood and worst.decision is not PolicyDecision.DENY:
            reason = f"the line is not fully understood ({analysis.reason})"
            return PolicyResult(worst.decision, worst.rule, f"{reason}; {worst.reason}")
        return worst

    def _decide_part(
        self, part: CommandPart, others: dict[str, Any], whole: Matcher, scope: _Scope
    ) -> PolicyResult:
        """The first rule that surely matches decides; a DENY rule that only *could* match
        before it (the part runs something we cannot see) makes the answer at least ASK_USER."""
        could_deny: PolicyRule | None = None
        texts: _PartTexts | None = None
        for rule in self.rules:
            if not rule.matches_tool(SHELL_TOOL):
                continue
            if rule.args_pattern is not None and texts is None:
                texts = self._part_texts(part, others, whole)
            match = _rule_matches(rule, part, texts, scope)
            if match == "no":
                continue
            if match == "maybe":
                if rule.decision is PolicyDecision.DENY and could_deny is None:
                    could_deny = rule
                continue
            result = self._surely_matched(rule, part)
            if could_deny is not None and result.decision is not PolicyDecision.DENY:
                return _could_be_denied(part, could_deny)
            return result
        if could_deny is not None:
            return _could_be_denied(part, could_deny)
        return PolicyResult(self.default, None, f"no rule matched {part.text!r}")

    def _part_texts(self, part: CommandPart, others: dict[str, Any], whole: Matcher) -> _PartTexts:
        words = _words(part)
        plain = f"{normal_paths(part.text)}\n{normal_paths(words)}\n{joined_paths(part.argv, others.get('directory'))}"
        return _PartTexts(
            self._patterns.matcher(stable_stringify({**others, "command": part.text})),
            self._patterns.matcher(stable_stringify({**others, "command": words})),
            whole,
            self._patterns.matcher(stable_stringify({**others, "command": plain})),
        )

    def _surely_matched(self, rule: PolicyRule, part: CommandPart) -> PolicyResult:
        if rule.decision is PolicyDecision.ALLOW and self.mode != "yolo":
            # yolo allows everything but explicit DENY rules (P5); elsewhere a person looks at
            # `LD_PRELOAD=x.so ls` and at output written to files.
            if part.assignments:
                return PolicyResult(PolicyDecision.ASK_USER, rule, f"{part.text!r} sets environment variables")
            if part.redirects_output and not rule.allow_redirection:
                return PolicyResult(
                    PolicyDecision.ASK_USER, rule, f"{part.text!r} redirects output to a file (or writes one, as sed -i does)"
                )
        return PolicyResult(rule.decision, rule, part.text)


@dataclass(frozen=True, slots=True)
class _PartTexts:
    """What an ``argsPattern`` is searched in, for one part of a shell line: the call with
    ``command`` narrowed to the part's source text, the same with the part's words and
    redirect targets after quote removal (``'r''m'`` is ``rm``, ``< ~/.a''ws/x`` reads
    ``~/.aws/x``), the whole call, and the part's text and words with their paths spelled
    plainly (``/etc//shadow`` is ``/etc/shadow``), relative ones also joined onto the call's
    ``directory``."""

    source: Matcher
    words: Matcher
    whole: Matcher
    plain: Matcher


@dataclass(frozen=True, slots=True)
class _Scope:
    """What a part is decided within: the whole line (a script may run what any word of it
    names) and whether commands run contained."""

    line: str
    sandboxed: bool


def _rule_matches(rule: PolicyRule, part: CommandPart, texts: _PartTexts | None, scope: _Scope) -> Match:
    """``yes``, ``no`` or ``maybe`` (the part could run something the rule denies, and only a
    DENY rule cares about that). A rule with no criteria is about every shell call: always yes.

    A DENY or ASK pattern is searched in every text the part could be read as (denying or
    asking about more is always safe); an ALLOW one only in the part's own source text. A
    DENY pattern that misses a part with a word only known at run time (a glob, ``$VAR``,
    ``~``) "could match" it: ``cat /etc/shado?`` opens ``/etc/shadow``."""
    deny = rule.decision is PolicyDecision.DENY
    wary = rule.decision is not PolicyDecision.ALLOW
    if rule.args_pattern is not None:
        assert texts is not None
        pattern = rule.args_pattern
        hit = texts.source(pattern) or (
            wary and (texts.words(pattern) or texts.whole(pattern) or texts.plain(pattern))
        )
        if not hit:
            return "maybe" if deny and _unsure(part, scope) else "no"
        if not deny and part.opacity == "unknown":
            # An ALLOW pattern cannot vouch for a part we cannot read; an ASK one may say why
            # a person is asked (asking allows nothing): the shipped `/proc` rule's reason.
            return "yes" if rule.decision is PolicyDecision.ASK_USER else "maybe"
        return "yes"
    if rule.command_prefixes is not None:
        found: Match = "no"
        # An ALLOW or ASK prefix compares the program's name exactly: most prefixes of a long
        # list (the sandboxed read-only commands) are passed over on their first word.
        name = part.argv[0] if not deny and part.argv and part.is_literal(0) else None
        for prefix in rule.command_prefixes:
            words = prefix_words(prefix)
            if name is not None and words and words[0] != name:
                continue
            match = prefix_match(part, words, by_basename=deny)
            if match == "no" and deny and part.redirect_targets:
                match = prefix_match(_with_targets(part), words, by_basename=True)
            if match == "no" and deny and words and _may_run(part, words[0], scope):
                match = "maybe"
            if match == "yes" or (match == "maybe" and found == "no"):
                found = match
        return _certainty(found, part, deny=deny, scope=scope)
    if rule.command_regex is not None:
        regex = rule.command_regex
        hit = wary_regex_hit(part, regex) if wary else matches_regex(part, regex)
        if deny and not hit and (_unsure(part, scope) or _may_run_match(part, regex, scope)):
            return "maybe"
        return _certainty("yes" if hit else "no", part, deny=deny, scope=scope)
    return "yes"


def _with_targets(part: CommandPart) -> CommandPart:
    """The part with its redirect targets as words after its own, for a DENY prefix:
    ``cat < /etc/shadow`` reads what ``cat /etc/shadow`` reads."""
    literal = (*part.literal, *(True for _ in part.redirect_targets)) if part.literal else ()
    return replace(part, argv=(*part.argv, *part.redirect_targets), literal=literal)


def _words(part: CommandPart) -> str:
    """The part's words and then its redirect targets, after quote removal."""
    return " ".join((*part.argv, *part.redirect_targets))


def _unsure(part: CommandPart, scope: _Scope) -> bool:
    """Whether a pattern that misses the part's text may still match what runs: a word only
    known at run time, or a relative path after the line changed directory (``cd /etc &&
    cat shadow``), counts as not fully literal; so does a program we cannot read, and, out of
    a sandbox, code a script or interpreter runs."""
    return _hidden(part, scope) or not part.fully_literal or part.moved


def _hidden(part: CommandPart, scope: _Scope) -> bool:
    """Whether the part runs something no word shows: an unknown program or, unless commands
    are contained, a script or interpreter."""
    return part.opacity == "unknown" or (part.opacity == "runs_code" and not scope.sandboxed)


def _may_run(part: CommandPart, name: str, scope: _Scope) -> bool:
    """Whether the part could run the program ``name`` that no command position names: an
    argument of a program that may run its arguments (``ionice rm x``, ``ssh host 'rm x'``),
    never of one whose arguments are data (``echo "rm -rf /"``, ``git commit -m "rm x"``); in
    a sandbox, a script or interpreter only when the line names it somewhere
    (``echo rm x | sh``), since what else it runs stays in the box."""
    if part.opacity == "runs_code" and scope.sandboxed:
        return _line_mentions(scope.line, name)
    return not takes_data_arguments(part) and mentions(part, name)


def _may_run_match(part: CommandPart, regex: CompiledPattern, scope: _Scope) -> bool:
    """``_may_run`` for a ``commandRegex``: found in the arguments of a program that may run
    them, or anywhere in the line of a contained script or interpreter."""
    if part.opacity == "runs_code" and scope.sandboxed:
        return regex.search(scope.line) is not None
    if takes_data_arguments(part) or len(part.argv) < 2:
        return False
    return regex.search(" ".join(part.argv[1:])) is not None


def _line_mentions(line: str, name: str) -> bool:
    return mentions(CommandPart(("", line), line, False), name)


def _certainty(match: Match, part: CommandPart, *, deny: bool, scope: _Scope) -> Match:
    if deny:
        return "maybe" if match == "no" and _hidden(part, scope) else match
    # Nothing about a part we cannot see may allow it (or ask on its behalf).
    return "maybe" if match == "yes" and part.opacity == "unknown" else match


def _could_be_denied(part: CommandPart, rule: PolicyRule) -> PolicyResult:
    return PolicyResult(
        PolicyDecision.ASK_USER,
        rule,
        f"{part.text!r} could run a command that {rule.name or 'a DENY rule'} denies, and what it "
        "runs cannot be read with certainty",
    )


def merged(*groups: Sequence[PolicyRule]) -> list[PolicyRule]:
    """Concatenate rule groups in load order (the order ties are broken by)."""
    return [rule for group in groups for rule in group]
