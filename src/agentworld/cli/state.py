"""The command line's global settings, set once before a command runs: ``--db`` (or
``$AGENTWORLD_DB``), and whether a person can be asked. A module of its own, so
``cli.output`` reads it without importing the commands."""

from __future__ import annotations

from typing import Any

state: dict[str, Any] = {"db": None, "interactive": True}
