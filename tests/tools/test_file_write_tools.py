"""write_file and edit_file on real files in temp dirs (SPEC F1): what they change, what they
refuse before anyone is asked, the diff a person approves and the check that the file is still
what was shown."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from agentworld.models.pending import ShownFile
from agentworld.tools.builtin import MAX_FILE_BYTES
from agentworld.tools.builtin.definitions import EDIT_FILE_TOOL, WRITE_FILE_TOOL
from agentworld.tools.builtin.file_writes import FILE_CHANGED
from agentworld.tools.executor import run_tool
from agentworld.tools.registry import Tool, ToolContext


def context(work: Path, **fields: Any) -> ToolContext:
    return ToolContext(world="w", chat_id="c", agent="a", working_dir=str(work), **fields)


def precheck(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str | None:
    assert tool.precheck is not None
    return tool.precheck(args, ctx)


async def run(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any] | str:
    """The tool's result as the model reads it: the value, or the error text."""
    import json

    result = await run_tool(tool, "call_1", args, ctx)
    document = json.loads(result.content)
    return document["error"] if result.is_error else document


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


async def test_write_file_creates_a_file_and_its_directories(work: Path) -> None:
    ctx = context(work)
    args = {"path": "docs/new.md", "content": "hello\nworld\n"}
    assert precheck(WRITE_FILE_TOOL, args, ctx) is None
    assert WRITE_FILE_TOOL.preview is not None
    shown = WRITE_FILE_TOOL.preview(args, ctx)
    assert shown.diff == "--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
    assert shown.file == ShownFile(path=str(work / "docs" / "new.md"), sha256=None)

    result = await run(WRITE_FILE_TOOL, args, ctx)

    assert result == {"path": "docs/new.md", "created": True, "changed": "+2 -0 lines"}
    assert (work / "docs" / "new.md").read_bytes() == b"hello\nworld\n"
    assert [p.name for p in (work / "docs").iterdir()] == ["new.md"]  # no temporary file left


async def test_write_file_over_an_existing_file_is_an_edit_in_the_diff_and_keeps_its_mode(work: Path) -> None:
    script = work / "run.sh"
    script.write_text("#!/bin/sh\necho one\n")
    script.chmod(0o750)
    ctx = context(work)
    args = {"path": "run.sh", "content": "#!/bin/sh\necho two\n"}
    assert WRITE_FILE_TOOL.preview is not None
    assert WRITE_FILE_TOOL.preview(args, ctx).diff == (
        "--- a/run.sh\n+++ b/run.sh\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo one\n+echo two\n"
    )
    assert await run(WRITE_FILE_TOOL, args, ctx) == {"path": "run.sh", "created": False, "changed": "+1 -1 lines"}
    assert script.read_text() == "#!/bin/sh\necho two\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750


async def test_edit_file_replaces_the_one_occurrence_with_three_lines_of_context(work: Path) -> None:
    lines = [f"line {n}\n" for n in range(1, 11)]
    lines[4] = "teh typo\n"
    (work / "notes.txt").write_text("".join(lines))
    ctx = context(work)
    args = {"path": "notes.txt", "old": "teh typo", "new": "the typo"}
    assert EDIT_FILE_TOOL.preview is not None
    assert EDIT_FILE_TOOL.preview(args, ctx).diff == (
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -2,7 +2,7 @@\n"
        " line 2\n line 3\n line 4\n-teh typo\n+the typo\n line 6\n line 7\n line 8\n"
    )
    assert await run(EDIT_FILE_TOOL, args, ctx) == {"path": "notes.txt", "created": False, "changed": "+1 -1 lines"}
    lines[4] = "the typo\n"
    assert (work / "notes.txt").read_text() == "".join(lines)


async def test_a_last_line_without_newline_is_marked_in_the_diff(work: Path) -> None:
    (work / "a.txt").write_text("one\ntwo")
    assert EDIT_FILE_TOOL.preview is not None
    diff = EDIT_FILE_TOOL.preview({"path": "a.txt", "old": "two", "new": "three\n"}, context(work)).diff
    assert diff == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n\\ No newline at end of file\n+three\n"
    )


async def test_an_ambiguous_old_is_refused_with_the_count_unless_replace_all(work: Path) -> None:
    (work / "a.txt").write_text("x = 1\nx = 1\nx = 1\n")
    ctx = context(work)
    args: dict[str, Any] = {"path": "a.txt", "old": "x = 1", "new": "x = 2"}
    problem = precheck(EDIT_FILE_TOOL, args, ctx)
    assert problem is not None and "occurs 3 times" in problem and "replaceAll" in problem
    assert "occurs 3 times" in str(await run(EDIT_FILE_TOOL, args, ctx))
    assert (work / "a.txt").read_text() == "x = 1\nx = 1\nx = 1\n"

    args["replaceAll"] = True
    assert precheck(EDIT_FILE_TOOL, args, ctx) is None
    assert await run(EDIT_FILE_TOOL, args, ctx) == {"path": "a.txt", "created": False, "changed": "+3 -3 lines"}
    assert (work / "a.txt").read_text() == "x = 2\nx = 2\nx = 2\n"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"path": "a.txt", "old": "absent", "new": "x"}, "not found in a.txt (0 matches)"),
        ({"path": "a.txt", "old": "", "new": "x"}, "old is empty"),
        ({"path": "a.txt", "old": "same", "new": "same"}, "nothing to change"),
        ({"path": "missing.txt", "old": "a", "new": "b"}, "does not exist; use write_file"),
    ],
)
async def test_edits_that_cannot_apply_are_refused_and_nothing_is_written(
    work: Path, args: dict[str, Any], says: str
) -> None:
    (work / "a.txt").write_text("same text\n")
    problem = precheck(EDIT_FILE_TOOL, args, context(work))
    assert problem is not None and says in problem
    assert says in str(await run(EDIT_FILE_TOOL, args, context(work)))
    assert (work / "a.txt").read_text() == "same text\n" and not (work / "missing.txt").exists()


def test_writing_the_same_content_is_refused_as_no_change(work: Path) -> None:
    (work / "a.txt").write_text("same\n")
    problem = precheck(WRITE_FILE_TOOL, {"path": "a.txt", "content": "same\n"}, context(work))
    assert problem is not None and "nothing to write" in problem


@pytest.mark.parametrize("tool", [WRITE_FILE_TOOL, EDIT_FILE_TOOL], ids=lambda t: t.name)
async def test_paths_that_escape_are_refused(work: Path, tmp_path: Path, tool: Tool) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside old\n")
    (work / "link.txt").symlink_to(outside)
    (work / "linkdir").symlink_to(tmp_path)
    for path in ("../outside.txt", str(outside), "link.txt", "linkdir/outside.txt", "linkdir/new.txt"):
        args = {"path": path, "content": "pwned\n"} if tool is WRITE_FILE_TOOL else {"path": path, "old": "old", "new": "pwned"}
        problem = precheck(tool, args, context(work))
        assert problem is not None and "outside the working directory" in problem, path
        assert "outside the working directory" in str(await run(tool, args, context(work)))
    assert outside.read_text() == "outside old\n"
    assert not (tmp_path / "new.txt").exists()


async def test_a_link_inside_the_working_directory_writes_its_target(work: Path) -> None:
    (work / "real.txt").write_text("a\n")
    (work / "alias.txt").symlink_to("real.txt")
    ctx = context(work)
    args = {"path": "alias.txt", "content": "b\n"}
    assert WRITE_FILE_TOOL.preview is not None
    assert WRITE_FILE_TOOL.preview(args, ctx).diff.startswith("--- a/real.txt\n+++ b/real.txt\n")
    assert await run(WRITE_FILE_TOOL, args, ctx) == {"path": "real.txt", "created": False, "changed": "+1 -1 lines"}
    assert (work / "alias.txt").is_symlink() and (work / "real.txt").read_text() == "b\n"


async def test_policy_files_the_database_and_git_are_never_written(work: Path) -> None:
    (work / "policy.toml").write_text("")
    (work / "world.db").write_bytes(b"")
    (work / ".git" / "hooks").mkdir(parents=True)
    ctx = context(work, protected=(str(work / "policy.toml"),), private=(str(work / "world.db"),))
    for path, says in (
        ("policy.toml", "kept from tools"),
        ("./world.db", "kept from tools"),
        (".git/hooks/pre-commit", ".git directory"),
        ("sub/.GIT/config", ".git directory"),
    ):
        args = {"path": path, "content": "#!/bin/sh\ntouch pwned\n"}
        problem = precheck(WRITE_FILE_TOOL, args, ctx)
        assert problem is not None and says in problem, path
        assert says in str(await run(WRITE_FILE_TOOL, args, ctx))
    assert (work / "policy.toml").read_text() == "" and not (work / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize(
    ("data", "says"),
    [(b"GIF89a\0\0\x01", "binary file"), (b"\xff\xfe caf\xe9", "not UTF-8 text"), (b"x" * (MAX_FILE_BYTES + 1), "over the file tools' limit")],
    ids=["nul", "not-utf8", "too-large"],
)
async def test_binary_and_too_large_files_are_refused(work: Path, data: bytes, says: str) -> None:
    (work / "blob").write_bytes(data)
    for tool, args in (
        (WRITE_FILE_TOOL, {"path": "blob", "content": "text\n"}),
        (EDIT_FILE_TOOL, {"path": "blob", "old": "x", "new": "y"}),
    ):
        problem = precheck(tool, args, context(work))
        assert problem is not None and says in problem
        assert says in str(await run(tool, args, context(work)))
    assert (work / "blob").read_bytes() == data


@pytest.mark.parametrize(
    ("content", "says"),
    [("a\0b", "NUL characters"), ("x" * (MAX_FILE_BYTES + 1), "over the file tools' limit"), ("\ud800", "UTF-8")],
    ids=["nul", "too-large", "surrogate"],
)
def test_binary_or_too_large_content_is_refused(work: Path, content: str, says: str) -> None:
    problem = precheck(WRITE_FILE_TOOL, {"path": "out.txt", "content": content}, context(work))
    assert problem is not None and says in problem


async def test_an_approved_write_runs_only_on_the_file_that_was_shown(work: Path) -> None:
    target = work / "notes.txt"
    target.write_text("teh\n")
    ctx = context(work)
    args = {"path": "notes.txt", "old": "teh", "new": "the"}
    assert EDIT_FILE_TOOL.preview is not None
    shown = EDIT_FILE_TOOL.preview(args, ctx).file

    target.write_text("teh\nsomeone else's line\n")  # changed after the diff was made
    assert await run(EDIT_FILE_TOOL, args, context(work, shown_file=shown)) == f"edit_file failed: {FILE_CHANGED}"
    assert target.read_text() == "teh\nsomeone else's line\n"

    target.write_text("teh\n")  # exactly what was shown again
    assert await run(EDIT_FILE_TOOL, args, context(work, shown_file=shown)) == {
        "path": "notes.txt", "created": False, "changed": "+1 -1 lines"
    }
    assert target.read_text() == "the\n"


async def test_a_file_created_after_a_new_file_was_shown_is_not_overwritten(work: Path) -> None:
    ctx = context(work)
    args = {"path": "new.txt", "content": "mine\n"}
    assert WRITE_FILE_TOOL.preview is not None
    shown = WRITE_FILE_TOOL.preview(args, ctx).file
    (work / "new.txt").write_text("theirs\n")
    assert await run(WRITE_FILE_TOOL, args, context(work, shown_file=shown)) == f"write_file failed: {FILE_CHANGED}"
    assert (work / "new.txt").read_text() == "theirs\n"


async def test_an_edit_whose_text_went_away_reports_the_file_changed(work: Path) -> None:
    (work / "a.txt").write_text("teh\n")
    args = {"path": "a.txt", "old": "teh", "new": "the"}
    assert EDIT_FILE_TOOL.preview is not None
    shown = EDIT_FILE_TOOL.preview(args, context(work)).file
    (work / "a.txt").write_text("rewritten\n")
    assert await run(EDIT_FILE_TOOL, args, context(work, shown_file=shown)) == f"edit_file failed: {FILE_CHANGED}"


def test_a_fifo_is_refused_without_blocking(work: Path) -> None:
    os.mkfifo(work / "pipe")
    problem = precheck(WRITE_FILE_TOOL, {"path": "pipe", "content": "x"}, context(work))
    assert problem is not None and "not a regular file" in problem
