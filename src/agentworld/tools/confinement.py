"""Keeping the built-in tools inside the world's working directory (SPEC T2).

One check serves ``read_file``, ``list_files`` and the ``directory`` of
``shell_cmd``. It runs on the resolved real path, after symlinks, so ``..``,
absolute paths elsewhere and links that lead outside are all refused the same
way; an absolute path that lies inside the working directory is fine.

The policy resolves a file tool's path the same way before every call it authorizes
(``runtime/path_views.py``), so paths are resolved as strings with ``os.path.realpath``,
as ``Path.resolve()`` resolves them but without building its objects, and the working
directory is resolved once per check.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


class OutsideWorkingDirectory(PermissionError):
    """The path leads outside the world's working directory."""


_OPEN_PATH_ONLY = getattr(os, "O_PATH", 0)
"""Linux's ``O_PATH``: opening a path for its name alone (no read, never blocks, any file type)."""


def real_path(path: str) -> str:
    """``path`` absolute, every symlink followed and every ``..`` taken, as ``Path.resolve()``
    makes it: a symlink loop raises ``RuntimeError``, a NUL byte ``ValueError``; a path that
    does not exist resolves as far as it exists.

    A path that exists is resolved by the kernel on Linux -- opened with ``O_PATH``, its name
    read back from ``/proc/self/fd`` -- in one system call, where ``os.path.realpath`` walks
    it one ``lstat`` per component: the policy resolves a file tool's path, and the working
    directory, before every call it authorizes."""
    if _OPEN_PATH_ONLY and "\0" not in path:
        try:
            fd = os.open(path, _OPEN_PATH_ONLY | os.O_CLOEXEC)
        except OSError:
            pass  # it does not exist (or cannot be reached): resolved below, as far as it goes
        else:
            try:
                real = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                real = ""  # no /proc: resolved below
            finally:
                os.close(fd)
            if real.startswith("/") and not real.endswith(" (deleted)"):
                return real
    try:
        return os.path.realpath(path, strict=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RuntimeError(f"symlink loop from {path!r}") from None
    real = os.path.realpath(path)  # as far as it exists
    try:
        os.stat(real)
    except OSError as exc:  # a loop further on: realpath leaves its link in place
        if exc.errno == errno.ELOOP:
            raise RuntimeError(f"symlink loop from {path!r}") from None
    return real


def working_root(working_dir: str | None) -> Path:
    """The world's working directory as a real path (the process's current one when unset)."""
    return Path(real_path(working_dir or os.getcwd()))


def confined_path(path: str, working_dir: str | None) -> Path:
    """Resolve ``path`` (relative to ``working_dir``, or absolute) to a real path inside it;
    raise ``OutsideWorkingDirectory`` when it escapes."""
    target, _ = _confined(path, real_path(working_dir or os.getcwd()))
    return Path(target)


def resolved_inside(path: str, working_dir: str | None) -> str | None:
    """Where ``path`` really leads, relative to the working directory (``.`` for the directory
    itself), as ``confined_path`` resolves it; None when it cannot be resolved or escapes (the
    tool refuses such a path anyway)."""
    try:
        _, relative = _confined(path, real_path(working_dir or os.getcwd()))
    except OutsideWorkingDirectory:
        return None
    return relative


def _confined(path: str, root: str) -> tuple[str, str]:
    """``path`` resolved inside the real directory ``root``: the real path, and that path
    relative to ``root`` (``.`` for ``root`` itself)."""
    try:
        target = real_path(os.path.join(root, path))  # an absolute ``path`` replaces root here
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
        # What cannot be resolved cannot be shown to be inside, so it is refused too.
        raise OutsideWorkingDirectory(f"{path!r} cannot be resolved inside the working directory: {exc}") from None
    if target == root:
        return target, "."
    inside = root if root.endswith(os.sep) else root + os.sep  # the root "/" ends in one
    if not target.startswith(inside):
        raise OutsideWorkingDirectory(f"{path!r} is outside the working directory {root!r}")
    return target, target[len(inside) :]
