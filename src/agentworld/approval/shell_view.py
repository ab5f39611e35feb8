"""A shell call as the person sees it, in a module of its own with no imports of ours:
the approval prompt builds it (``approval.display``), and the CLI's quick listing
(``storage.sqlite_reads``) reads it back from a stored request without loading the shell
analysis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ShellView:
    """A shell call as the person sees it and the audit log records it."""

    command_line: str
    directory: str
    commands: tuple[str, ...]
    understood: bool
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "commandLine": self.command_line,
            "directory": self.directory,
            "commands": list(self.commands),
            "understood": self.understood,
            "note": self.note,
        }

    def sentence(self) -> str:
        commands = "; ".join(f"`{c}`" for c in self.commands) or "nothing we could read"
        text = f"run `{self.command_line}` in {self.directory} (runs: {commands})"
        return f"{text}. {self.note}" if self.note else text
