"""Rules for what a world's settings may hold, at the ground of the package graph.

The world model validates its settings when they are set; the rules it checks belong to
the tools and the policy that use them, but live here so ``models`` imports nothing above
itself (``tools.environment`` and ``policy.rules`` import them from here).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

NEVER_PASSED = frozenset({
    "BASH_ENV",
    "ENV",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "PYTHONSTARTUP",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "IFS",
    "CDPATH",
    "GLOBIGNORE",
})
"""Variables that make a shell (or the loader) run or read code the policy never saw."""
NEVER_PASSED_PREFIXES = ("BASH_FUNC_", "LD_", "DYLD_")
"""Exported bash functions and dynamic-loader settings, by prefix."""

_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

MAX_TURN_LIMIT = 10_000
"""LLM calls per agent before a person must step in (SPEC R4); more is a typo, not a setting."""
MAX_ITERATIONS = 1_000
"""LLM iterations per message (SPEC O1)."""
MAX_OUTPUT_TOKENS = 1_000_000
"""An agent's ``max_tokens``: above any model's output limit, so a larger value is a mistake
(``1e20`` would otherwise be sent to the provider)."""
DEFAULT_MODEL_DEADLINE_SECONDS = 300
"""How long one model call of an agent may take in all, its retries and their waits included
(SPEC L5): past it the turn ends with a system event rather than waiting on a silent model."""
MAX_MODEL_DEADLINE_SECONDS = 86_400
"""An agent's ``model_deadline_seconds``: a day; more is a typo, not a setting."""


def check_tool_env_name(name: str) -> str | None:
    """Why ``name`` cannot be in a world's ``tool_env`` setting, or None when it can."""
    if not _VARIABLE_NAME.fullmatch(name):
        return f"tool_env: {name!r} is not a variable name (letters, digits and '_', not starting with a digit)"
    if name in NEVER_PASSED or name.startswith(NEVER_PASSED_PREFIXES):
        return f"tool_env: {name} changes how the shell or loader runs code and is never passed to tools"
    return None


def validate_tool_env(names: Iterable[str]) -> list[str]:
    """The names of a ``tool_env`` setting, deduplicated in order; ValueError on the first bad one."""
    checked: list[str] = []
    for name in names:
        if (problem := check_tool_env_name(name)) is not None:
            raise ValueError(problem)
        if name not in checked:
            checked.append(name)
    return checked


def parse_tool_selector(name: str | None) -> tuple[str | None, str | None]:
    """A ``toolName`` as ``(tool_name, tool_prefix)`` for ``PolicyRule``.

    ``read_file`` is that tool; ``*`` every tool; ``read_*`` / ``github__*`` every tool whose
    name starts with the part before the star. A star anywhere else is refused with
    ``ValueError``: ``*_file`` or ``git*hub`` would otherwise be an exact name no tool has, a
    DENY rule that silently denies nothing.
    """
    if name is None or "*" not in name:
        return name, None
    if name.index("*") != len(name) - 1:
        raise ValueError(
            f"toolName {name!r}: '*' is only allowed at the end ('*', 'read_*', 'github__*')"
        )
    return None, name[:-1]
