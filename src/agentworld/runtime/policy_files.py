"""The policy files a world names, parsed once and re-read only when they change.

The policy file loader (with its TOML parser) is imported at first use, as in
``runtime.authorizer``: a process whose turns call no tool never needs it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentworld.errors import InvalidInputError

if TYPE_CHECKING:
    from agentworld.policy.loader import PolicySet

ADMIN_POLICY_ENV = "AGENTWORLD_ADMIN_POLICY"
WORLD_RULES_SOURCE = "policyRules"
"""The source ``policy list`` names for the rules a world holds itself (its ``policyRules``)."""


@dataclass
class _CachedFile:
    stamp: tuple[int, int]
    loaded: PolicySet


class PolicyFiles:
    """Parsed policy files, re-read only when a file changes (mtime or size)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int], _CachedFile] = {}

    def load(self, path: str, tier: int) -> PolicySet:
        from agentworld.policy.loader import load_policy_file

        try:
            stat = Path(path).stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            return load_policy_file(path, tier=tier)  # reports file_read
        cached = self._cache.get((path, tier))
        if cached is None or cached.stamp != stamp:
            cached = self._cache[(path, tier)] = _CachedFile(
                stamp, load_policy_file(path, tier=tier)
            )
        return cached.loaded


def admin_policy_files() -> list[str]:
    return [p for p in os.environ.get(ADMIN_POLICY_ENV, "").split(os.pathsep) if p]


SQLITE_COMPANIONS = ("", "-wal", "-shm", "-journal")
"""A SQLite database's files: the database and what the driver writes beside it."""


def kept_from_tools(database_url: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a contained tool process may not change (the admin policy files) and may not see
    (a SQLite database's files), should they lie in a world's working directory; the world's
    own policy files are added by ``ToolContext.for_world``."""
    from agentworld.storage.url import sqlite_file

    database = sqlite_file(database_url)
    private = tuple(f"{database}{suffix}" for suffix in SQLITE_COMPANIONS) if database else ()
    return tuple(admin_policy_files()), private


def check_policy_files(paths: Sequence[str | Path]) -> None:
    """Refuse files with any error, naming the file and rule (used when a world is configured)."""
    from agentworld.policy.loader import load_policy_file

    errors = [e for path in paths for e in load_policy_file(path).errors]
    if errors:
        raise InvalidInputError("; ".join(str(e) for e in errors))


def check_policy_rules(tables: Sequence[object]) -> None:
    """Refuse a world's own rules (``policyRules``) with any error, naming the rule (from 1)."""
    from agentworld.policy.loader import load_policy_tables

    errors = load_policy_tables(tables, source=WORLD_RULES_SOURCE).errors
    if errors:
        raise InvalidInputError("policy_rules: " + "; ".join(
            f"rule {e.rule + 1}: {e.message}" if e.rule is not None else e.message for e in errors
        ))
