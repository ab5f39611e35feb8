"""A shell call as the person sees it, in a module of its own with no imports of ours:
the approval prompt builds it (``approval.display``), and the CLI's quick listing
(``storage.sqlite_reads``) reads it back from a stored request without loading the shell
analysis. Here too, for the same reason, is how any outside text is shown to a person:
``escape_controls``, which the CLI's transcripts use as well as the approval prompt."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# C0/C1 controls, DEL, bidirectional embeddings/overrides/isolates, zero-width characters.
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\e"}


def escape_controls(text: str, *, keep: str = "") -> str:
    """``text`` with every invisible or terminal-controlling character shown as an escape
    (``\\e[2K``, ``\\u202e``), so it cannot move the cursor, hide text or reorder a line;
    the characters of ``keep`` (``"\\n\\t"`` for a message's body) are left as they are."""

    def shown(match: re.Match[str]) -> str:
        char = match[0]
        if char in keep:
            return char
        return _NAMED.get(char) or f"\\u{ord(char):04x}"

    return _INVISIBLE.sub(shown, text)


def first_control(text: str, *, allow: str = "") -> str | None:
    """The first character of ``text`` that ``escape_controls`` would show as an escape (the
    characters of ``allow`` aside), or None: how a name a person gives is checked, so what is
    stored prints as it was typed."""
    return next((char for char in _INVISIBLE.findall(text) if char not in allow), None)


def replace_controls(text: str, by: str = " ") -> str:
    """``text`` with each character ``escape_controls`` would escape replaced by ``by``: for
    text made from outside text (a chat title), which should hold none at all."""
    return _INVISIBLE.sub(by, text)


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
