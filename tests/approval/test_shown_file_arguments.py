"""How a file tool's arguments are shown in its approval: the file's text with its lines (a
person who corrects it edits lines, not escapes) and this process's secrets masked, as in the
diff beside it; the path and every other tool's values with control characters escaped."""

from __future__ import annotations

import pytest

from agentworld.approval.display import shown_arguments


def test_a_files_text_keeps_its_lines_and_tabs_but_not_terminal_controls() -> None:
    view = shown_arguments("write_file", {"path": "notes\n.md", "content": "a\n\tb\x1b[2J"})
    assert view == {"path": "notes\\n.md", "content": "a\n\tb\\e[2J"}
    edit = shown_arguments("edit_file", {"path": "x", "old": "one\ntwo", "new": "one\n2"})
    assert edit == {"path": "x", "old": "one\ntwo", "new": "one\n2"}


def test_other_tools_show_line_breaks_as_escapes() -> None:
    assert shown_arguments("shell_cmd", {"command": "ls\nrm -rf x"}) == {"command": "ls\\nrm -rf x"}


def test_a_secret_value_of_this_process_is_masked_in_a_files_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "t0k-3n-v4lue-for-the-deploys")
    view = shown_arguments("write_file", {"path": "env", "content": "TOKEN=t0k-3n-v4lue-for-the-deploys\n"})
    assert view["content"] == "TOKEN=[REDACTED:DEPLOY_TOKEN]\n"
