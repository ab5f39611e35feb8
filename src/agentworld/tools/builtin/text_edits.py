"""What ``write_file`` and ``edit_file`` change in a text, and the diff a person approves (SPEC F1).

Pure functions, no I/O: ``files_written`` reads and writes the files; this module says what
the new text is (or why there is none), how the change reads as a unified diff, and how many
lines it adds and removes.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from agentworld.tools.builtin import MAX_FILE_BYTES

CONTEXT_LINES = 3
"""Unchanged lines shown around each change in the diff."""

NEW_FILE_NAME = "/dev/null"
"""The old name in the diff of a file that does not exist yet (as ``git diff`` writes it)."""

_LINES = re.compile(r"[^\n]*\n|[^\n]+")
"""A line and its ``\\n``, and a last line without one: only ``\\n`` ends a line, so a ``\\r``
or a form feed inside one stays in it, as it is in the file."""

_NO_NEWLINE = "\\ No newline at end of file\n"


class EditRefused(ValueError):
    """The change cannot be made; the message says why, for the model to fix its call."""


@dataclass(frozen=True, slots=True)
class Change:
    """A file's text before (None: no such file) and after a call, and the diff between."""

    before: str | None
    after: str
    diff: str
    added: int
    removed: int

    @property
    def summary(self) -> str:
        """``+N -M lines``: what the tool result says changed."""
        return f"+{self.added} -{self.removed} lines"


def text_of(data: bytes, name: str) -> str:
    """A file's bytes as text, refused when they are binary (a NUL byte, or not UTF-8) or over
    ``MAX_FILE_BYTES``."""
    if len(data) > MAX_FILE_BYTES:
        raise EditRefused(f"{name} is {len(data)} bytes, over the file tools' limit of {MAX_FILE_BYTES} bytes")
    if b"\0" in data:
        raise EditRefused(f"{name} is a binary file (it holds NUL bytes); the file tools change text files only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise EditRefused(f"{name} is not UTF-8 text; the file tools change text files only") from None


def encoded(text: str, name: str) -> bytes:
    """The new text as the bytes written, refused when it is binary or too large."""
    if "\0" in text:
        raise EditRefused(f"the new content of {name} holds NUL characters; the file tools write text only")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EditRefused(f"the new content of {name} cannot be written as UTF-8: {exc.reason}") from None
    if len(data) > MAX_FILE_BYTES:
        raise EditRefused(
            f"the new content of {name} is {len(data)} bytes, over the file tools' limit of {MAX_FILE_BYTES} bytes"
        )
    return data


def replaced(text: str, old: str, new: str, *, replace_all: bool, name: str) -> str:
    """``text`` with ``old`` replaced by ``new``: ``old`` must occur exactly once, or at least
    once with ``replace_all``; the refusal says how many times it occurs."""
    if not old:
        raise EditRefused("old is empty: give the exact text to replace (use write_file to write a whole file)")
    if old == new:
        raise EditRefused("old and new are the same text: there is nothing to change")
    count = text.count(old)
    if count == 0:
        raise EditRefused(f"old was not found in {name} (0 matches); read the file and give its exact text")
    if count > 1 and not replace_all:
        raise EditRefused(
            f"old occurs {count} times in {name}; give more surrounding text so it matches exactly "
            "once, or set replaceAll to replace every occurrence"
        )
    return text.replace(old, new)


def change(before: str | None, after: str, path: str) -> Change:
    """The change from ``before`` (None: the file does not exist) to ``after`` of the file at
    ``path`` (relative to the working directory), as a unified diff with ``CONTEXT_LINES``
    lines of context; a new file is diffed against empty, with ``/dev/null`` as its old name."""
    if before == after:
        raise EditRefused(f"{path} already holds exactly this text: there is nothing to write")
    old_lines = _LINES.findall(before or "")
    new_lines = _LINES.findall(after)
    old_name = NEW_FILE_NAME if before is None else f"a/{path}"
    lines: list[str] = []
    for line in difflib.unified_diff(old_lines, new_lines, old_name, f"b/{path}", n=CONTEXT_LINES):
        lines.append(line if line.endswith("\n") else f"{line}\n{_NO_NEWLINE}")
    if not lines:  # a new empty file: no hunk, the headers say it is created
        lines = [f"--- {old_name}\n", f"+++ b/{path}\n"]
    body = lines[2:]
    added = sum(1 for line in body if line.startswith("+"))
    removed = sum(1 for line in body if line.startswith("-"))
    return Change(before, after, "".join(lines), added, removed)
