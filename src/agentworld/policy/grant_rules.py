""""Approve always" answers as policy rules (SPEC A5, P6), for the runtime and the bus alike.

One function turns a remembered grant into its ALLOW rule at priority 2.95, narrowed for
``shell_cmd`` to the approved commands (exact names, see ``approval.grants``) and for the
built-in file tools to the approved paths (an ``argsPattern`` on the whole top-level ``path``
pair), so the agent runtime and the embedders' confirmation bus can never disagree about what
"always" covers. A file-tool grant without paths (stored before paths were recorded) gives no
rule: the call is asked about again.

The rule never allows output redirection itself: where a line may write depends on the
working directory (symlinks, the call's ``directory``), which a rule cannot see. A line of the
approved commands that writes files is asked about by the rule, and then covered by the grant
only when its redirections write the files the person saw written (``approval.grants``, and
``runtime/authorizer.decide_call``); the rule's name lists them. Like every "always" rule it
never overrides a DENY rule (``PolicyRule.from_approval``, SPEC P6).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from agentworld.approval.grants import FILE_TOOLS, SHELL_TOOL, Grant
from agentworld.policy.rules import (
    ALWAYS_ALLOW_PRIORITY,
    CompiledPattern,
    PolicyDecision,
    PolicyRule,
)

_DOTS = r"(?:\./+)*"
"""``./`` segments, which lexical normalisation drops (``approval.grants.normal_path``)."""
_TAIL = r"(?:/+\.?)*"
"""Trailing slashes and ``.`` segments."""


def _segment(text: str) -> str:
    return re.escape(json.dumps(text, ensure_ascii=False)[1:-1])


def path_regex(path: str) -> str:
    """A regex for every JSON string value whose path normalises to ``path`` (a normalised
    path), and nothing else: ``.env``, ``./.env``, ``.//.env/`` for ``.env``."""
    segments = [s for s in path.split("/") if s not in ("", ".")]
    lead = "/+" + _DOTS if path.startswith("/") else _DOTS
    if not segments:  # the root, or the working directory (``""`` too, as list_files reads it)
        return "/+" + _DOTS + r"\.?" if path.startswith("/") else r"(?:\.(?:/+\.?)*)?"
    return lead + ("/+" + _DOTS).join(_segment(s) for s in segments) + _TAIL


def path_pattern(paths: Iterable[str]) -> CompiledPattern:
    """The ``argsPattern`` of a file-tool grant: the top-level ``path`` pair (delimited by NULs
    in the stable stringify, ``policy/stringify.py``) naming one of ``paths``."""
    from agentworld.policy.loader import compile_pattern  # RE2: loaded when a policy is

    choices = "|".join(path_regex(p) for p in sorted(paths))
    # Built here from escaped paths, not written by a person: its ``(?:\./+)*`` nests
    # quantifiers by construction, which RE2 runs in linear time.
    return compile_pattern(rf'\x00"path":"(?:{choices})"\x00', allow_nested=True)


def always_rule(grant: Grant, *, source: str | None = None) -> PolicyRule | None:
    """The ALLOW rule of an "always" grant; None for a shell or file-tool grant without approved
    commands or paths."""
    shell = grant.tool_name == SHELL_TOOL
    files = grant.tool_name in FILE_TOOLS
    if grant.scope != "always" or ((shell or files) and not grant.roots):
        return None
    writes = f" (may write {', '.join(sorted(grant.redirect_targets))})" if shell and grant.redirect_targets else ""
    return PolicyRule(
        decision=PolicyDecision.ALLOW,
        priority=ALWAYS_ALLOW_PRIORITY,
        tool_name=grant.tool_name,
        args_pattern=path_pattern(grant.roots) if files and grant.roots else None,
        command_prefixes=tuple(sorted(grant.roots)) if shell and grant.roots else None,
        source=source or f"always:{grant.grant_id}",
        name=f"always allow {grant.tool_name}{writes}",
        from_approval=True,
    )


def always_rules(grants: Iterable[Grant]) -> list[PolicyRule]:
    """The ALLOW rules of every "always" grant, in order."""
    return [rule for grant in grants if (rule := always_rule(grant)) is not None]
