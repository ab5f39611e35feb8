"""Keeping the built-in tools inside the world's working directory (SPEC T2).

One check serves ``read_file``, ``list_files`` and the ``directory`` of
``shell_cmd``. It runs on the resolved real path, after symlinks, so ``..``,
absolute paths elsewhere and links that lead outside are all refused the same
way; an absolute path that lies inside the working directory is fine.
"""

from __future__ import annotations

import os
from pathlib import Path


class OutsideWorkingDirectory(PermissionError):
    """The path leads outside the world's working directory."""


def working_root(working_dir: str | None) -> Path:
    """The world's working directory as a real path (the process's current one when unset)."""
    return Path(working_dir or os.getcwd()).resolve()


def confined_path(path: str, working_dir: str | None) -> Path:
    """Resolve ``path`` (relative to ``working_dir``, or absolute) to a real path inside it;
    raise ``OutsideWorkingDirectory`` when it escapes."""
    root = working_root(working_dir)
    try:
        target = (root / path).resolve()  # an absolute ``path`` replaces root here
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
        # What cannot be resolved cannot be shown to be inside, so it is refused too.
        raise OutsideWorkingDirectory(f"{path!r} cannot be resolved inside the working directory: {exc}") from None
    if target != root and root not in target.parents:
        raise OutsideWorkingDirectory(f"{path!r} is outside the working directory {str(root)!r}")
    return target


def resolved_inside(path: str, working_dir: str | None) -> str | None:
    """Where ``path`` really leads, relative to the working directory (``.`` for the directory
    itself), as ``confined_path`` resolves it; None when it cannot be resolved or escapes (the
    tool refuses such a path anyway)."""
    try:
        target = confined_path(path, working_dir)
    except OutsideWorkingDirectory:
        return None
    return target.relative_to(working_root(working_dir)).as_posix()
