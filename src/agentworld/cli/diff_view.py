"""A file tool's change as an approval view prints it (SPEC F1): the unified diff, each line
escaped like the rest of the approval text, coloured where the terminal shows colour (added
lines green, removed red, hunk headers cyan; rich leaves the colour out when the output is not
a terminal or ``NO_COLOR`` is set)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworld.approval.shell_view import escape_controls

if TYPE_CHECKING:
    from rich.console import Console


def line_style(line: str) -> str | None:
    """The colour of one diff line: headers bold, hunks cyan, added green, removed red."""
    if line.startswith(("--- ", "+++ ")):
        return "bold"
    if line.startswith("@@"):
        return "cyan"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    return None


def print_diff(console: Console, diff: str, *, indent: str = "    ") -> None:
    """Each line of ``diff`` on its own line, indented, its control characters shown as
    escapes (only ``\\n`` ends a line: a ``\\r`` in one is shown, never obeyed)."""
    for line in diff.removesuffix("\n").split("\n"):
        console.print(indent + escape_controls(line), style=line_style(line), markup=False, highlight=False)
