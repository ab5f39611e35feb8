"""A diff as ``talk`` shows it in an approval prompt: each line's kind, its colour where the
terminal has colours, and control characters shown escaped so a file's content cannot rewrite
the screen."""

from __future__ import annotations

import io

from rich.console import Console

from agentworld.cli.diff_view import DiffLine, diff_lines, print_diff

TYPO = """--- a/notes.txt
+++ b/notes.txt
@@ -1,3 +1,3 @@
 first line
-the quick brwon fox
+the quick brown fox
 last line
"""


def test_each_line_has_its_kind_and_a_removed_line_that_looks_like_a_header_stays_removed() -> None:
    tricky = TYPO + "@@ -9 +9 @@\n--- not a header\n+++ nor this\n\\ No newline at end of file\n"

    kinds = [line.kind for line in diff_lines(tricky)]

    assert kinds == ["header", "header", "hunk", "context", "removed", "added", "context",
                     "hunk", "removed", "added", "note"]  # fmt: skip


def test_control_characters_in_a_line_are_shown_escaped_and_tabs_kept() -> None:
    hostile = "@@ -0,0 +1 @@\n+ok\x1b[2K\x1b[1Ahidden\rover\u202etxt\tend\n"

    (_, added) = diff_lines(hostile)

    assert added == DiffLine("added", "+ok\\e[2K\\e[1Ahidden\\rover\\u202etxt\tend")
    assert "\x1b" not in added.text and "\r" not in added.text


def test_an_empty_diff_has_no_lines() -> None:
    assert diff_lines("") == []


def rendered(*, color: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="standard" if color else None,
                      no_color=not color, width=80)  # fmt: skip
    print_diff(console, TYPO, indent="  ")
    return out.getvalue()


def test_on_a_colour_terminal_added_lines_are_green_removed_red_hunks_cyan() -> None:
    shown = rendered(color=True)

    assert "\x1b[32m  +the quick brown fox" in shown
    assert "\x1b[31m  -the quick brwon fox" in shown
    assert "\x1b[36m  @@ -1,3 +1,3 @@" in shown


def test_without_colours_the_lines_are_plain_and_whole() -> None:
    long = "@@ -1 +1 @@\n+" + "x" * 500 + "\n"
    out = io.StringIO()
    print_diff(Console(file=out, no_color=True, width=40, color_system=None), long)

    assert "\x1b[3" not in rendered(color=False)
    assert out.getvalue().replace("\n", "").count("x") == 500  # wrapped by the terminal, not cut
