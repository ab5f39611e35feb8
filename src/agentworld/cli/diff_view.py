"""A file tool's change as an approval view prints it (SPEC F1: the diff is what is approved;
``agentworld approvals``, ``talk``).

``diff_lines`` is pure: each line of the diff with its kind and its text, every control
character shown as an escape (``escape_controls``), so a file's content cannot move the cursor,
hide a line or reorder one on the screen. ``print_diff`` prints them whole — a long diff
scrolls the terminal, nothing is cut — coloured by kind (added green, removed red, hunk
headers cyan) where the console has colours; rich leaves them plain when the output is not a
terminal, under ``NO_COLOR`` or on a terminal without colours, where the ``+``/``-`` of each
line still tells them apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agentworld.approval.shell_view import escape_controls

if TYPE_CHECKING:
    from rich.console import Console

LineKind = Literal["header", "hunk", "added", "removed", "context", "note"]

STYLES: dict[LineKind, str] = {
    "header": "bold",
    "hunk": "cyan",
    "added": "green",
    "removed": "red",
    "context": "",
    "note": "dim",
}
"""How each kind of line is coloured (rich styles)."""


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: LineKind
    text: str
    """The line as shown: control characters escaped, tabs kept."""


def diff_lines(diff: str) -> list[DiffLine]:
    """Each line of ``diff`` with its kind. Only ``\\n`` ends a line: a carriage return or
    form feed inside a file's line is part of it, shown escaped."""
    lines = diff.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    shown: list[DiffLine] = []
    in_hunk = False
    for line in lines:
        kind = _kind(line, in_hunk=in_hunk)
        in_hunk = in_hunk or kind == "hunk"
        shown.append(DiffLine(kind, escape_controls(line, keep="\t")))
    return shown


def _kind(line: str, *, in_hunk: bool) -> LineKind:
    if line.startswith("@@"):
        return "hunk"
    if line.startswith(("---", "+++")) and not in_hunk:
        return "header"
    if line.startswith("\\"):
        return "note"  # "\ No newline at end of file"
    if line.startswith("+"):
        return "added"
    if line.startswith("-"):
        return "removed"
    return "context"


def print_diff(console: Console, diff: str, *, indent: str = "    ") -> None:
    """Print ``diff`` whole, one coloured line per diff line (no markup is read in it)."""
    from rich.text import Text

    for line in diff_lines(diff):
        console.print(Text(indent + line.text, style=STYLES[line.kind]), soft_wrap=True)
