"""The working-directory check resolves paths with ``os.path.realpath`` (fast enough to run
before every file tool call the policy authorizes). It must decide exactly as resolving with
``Path.resolve()`` decides, on a real directory tree with symlinks in and out, ``..``,
absolute paths, loops, NUL bytes and paths that do not exist."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentworld.tools.confinement import (
    OutsideWorkingDirectory,
    confined_path,
    resolved_inside,
    working_root,
)


def by_path_resolve(path: str, working_dir: str) -> str | None:
    """The check as ``pathlib`` decides it: where ``path`` leads inside, else None."""
    root = Path(working_dir).resolve()
    try:
        target = (root / path).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    if target != root and root not in target.parents:
        return None
    return target.relative_to(root).as_posix()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``work`` (reached through the link ``work-link``) beside ``outside``, with links in
    and out, a loop, and a link into a subdirectory."""
    work = tmp_path / "work"
    (work / "sub" / "deeper").mkdir(parents=True)
    (work / "note.txt").write_text("note")
    (work / ".env").write_text("SECRET=1")
    (work / "sub" / "a.txt").write_text("a")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("s")
    (work / "to-env").symlink_to(".env")
    (work / "to-sub").symlink_to("sub")
    (work / "escape").symlink_to(tmp_path / "outside")
    (work / "escape-file").symlink_to(tmp_path / "outside" / "secret")
    (work / "loop-a").symlink_to("loop-b")
    (work / "loop-b").symlink_to("loop-a")
    (work / "dangling").symlink_to("missing/file")
    (tmp_path / "work-link").symlink_to(work)
    (tmp_path / "work-sibling").mkdir()  # shares the prefix "work", is not inside
    return tmp_path


PATHS = [
    "note.txt", ".", "", "./note.txt", "sub/a.txt", "sub/../note.txt", "sub/deeper/../../.env",
    "to-env", "to-sub/a.txt", "to-sub/../note.txt", "escape", "escape/secret", "escape-file",
    "../outside/secret", "..", "../work/note.txt", "../work-sibling", "loop-a", "loop-a/x",
    "missing", "missing/deeper/file", "dangling", "note.txt/not-a-dir", "sub//a.txt",
    "a\x00b", "/etc/passwd", "/", "~/note.txt", "sub/./deeper/",
]  # fmt: skip


@pytest.mark.parametrize("through_link", [False, True], ids=["real-dir", "linked-dir"])
@pytest.mark.parametrize("path", PATHS + ["<abs-inside>", "<abs-outside>"])
def test_decides_as_path_resolve_decides(tree: Path, path: str, through_link: bool) -> None:
    working_dir = str(tree / ("work-link" if through_link else "work"))
    path = {"<abs-inside>": str(tree / "work" / "sub" / "a.txt"),
            "<abs-outside>": str(tree / "outside" / "secret")}.get(path, path)  # fmt: skip
    expected = by_path_resolve(path, working_dir)
    assert resolved_inside(path, working_dir) == expected
    if expected is None:
        with pytest.raises(OutsideWorkingDirectory):
            confined_path(path, working_dir)
    else:
        assert confined_path(path, working_dir) == Path(working_dir).resolve() / expected


def test_the_root_directory_as_working_directory(tree: Path) -> None:
    assert resolved_inside(str(tree / "work" / "note.txt"), "/") == by_path_resolve(
        str(tree / "work" / "note.txt"), "/"
    )
    assert resolved_inside("/", "/") == "."


def test_the_working_root_is_the_current_directory_when_unset(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree / "work-link")
    assert working_root(None) == (tree / "work").resolve()
    assert resolved_inside("to-env", None) == ".env"
    assert os.path.isabs(str(confined_path("note.txt", None)))
