"""``write_file`` and ``edit_file`` (SPEC F1): text files changed inside the working directory.

A call is planned the same way three times: by its precheck (refused before anyone is asked:
a path outside the working directory, a protected file, a binary or too large file, an
``old`` that is not found or is ambiguous), by its preview (the diff a person approves, with
the file as it was then) and when it runs. Paths are confined by ``tools/confinement.py``,
the code ``read_file`` uses. The world's policy files and database (``ToolContext.protected``
/ ``private``) and anything under a ``.git`` directory (its hooks run later) are never written.

An approved call writes only if the file is still exactly what the person was shown
(``ToolContext.shown_file``). The write is atomic: a temporary file in the same directory,
opened through that directory, then renamed over the target, keeping the file's mode.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.models.pending import ShownFile
from agentworld.tools.builtin import MAX_FILE_BYTES
from agentworld.tools.builtin.text_edits import (
    Change,
    EditRefused,
    change,
    encoded,
    replaced,
    text_of,
)
from agentworld.tools.confinement import confined_path, real_path, working_root
from agentworld.tools.registry import FilePreview, ToolContext

FILE_CHANGED = "the file changed since it was shown; nothing written"
"""The result of an approved call whose file is no longer what the person approved."""

_NEW_FILE_MODE = 0o666
"""A new file's mode before the process's umask, as ``open(..., "w")`` makes it."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a call would do: the real target, its path relative to the working directory, the
    file as it is (``shown``) and the change."""

    target: Path
    relative: str
    shown: ShownFile
    change: Change
    data: bytes


def precheck(args: dict[str, Any], context: ToolContext, *, tool: str) -> str | None:
    """Why the call cannot be made whatever a person answers, or None when it can."""
    try:
        _plan(args, context, tool=tool)
    except (EditRefused, OSError) as exc:
        return str(exc)
    return None


def preview(args: dict[str, Any], context: ToolContext, *, tool: str) -> FilePreview:
    """The diff the call would make and the file it was made from."""
    plan = _plan(args, context, tool=tool)
    return FilePreview(diff=plan.change.diff, file=plan.shown)


async def run(args: dict[str, Any], context: ToolContext, *, tool: str) -> dict[str, Any]:
    """Make the change: only if the file is still what was shown, when something was shown."""
    expected = context.shown_file
    try:
        plan = _plan(args, context, tool=tool)
    except (EditRefused, OSError):
        if expected is not None and _now(expected.path) != expected:
            raise EditRefused(FILE_CHANGED) from None
        raise
    if expected is not None and plan.shown != expected:
        raise EditRefused(FILE_CHANGED)
    _write_atomically(plan.target, plan.data, expected)
    return {
        "path": plan.relative,
        "created": plan.change.before is None,
        "changed": plan.change.summary,
    }


def _plan(args: dict[str, Any], context: ToolContext, *, tool: str) -> _Plan:
    path = args["path"]
    root = working_root(context.working_dir)
    target = confined_path(path, context.working_dir)
    if target == root:
        raise EditRefused(f"{path!r} is the working directory itself, not a file")
    relative = target.relative_to(root).as_posix()
    _refuse_kept(target, relative, context)
    before, shown = _read(target, relative)
    if tool == "write_file":
        after = args["content"]
    else:
        if before is None:
            raise EditRefused(f"{relative} does not exist; use write_file to create a file")
        after = replaced(before, args["old"], args["new"], replace_all=args.get("replaceAll") is True, name=relative)
    data = encoded(after, relative)
    return _Plan(target, relative, shown, change(before, after, relative), data)


def _refuse_kept(target: Path, relative: str, context: ToolContext) -> None:
    """Refuse the world's policy files and database, and anything inside a ``.git`` directory."""
    real = str(target)
    for kept in (*context.protected, *context.private):
        if real_path(kept) == real or os.path.abspath(kept) == real:
            raise EditRefused(f"{relative} is kept from tools (the world's policy or database); it cannot be written")
    if any(part.casefold() == ".git" for part in relative.split("/")):
        raise EditRefused(f"{relative} is inside a .git directory, which the file tools never write (hooks there run code)")


def _read(target: Path, relative: str) -> tuple[str | None, ShownFile]:
    """The file's text (None: it does not exist) and what it is now; refused when it is not a
    regular text file within the size limit."""
    data = _bytes(target, relative)
    if data is None:
        return None, ShownFile(path=str(target), sha256=None)
    return text_of(data, relative), ShownFile(path=str(target), sha256=hashlib.sha256(data).hexdigest())


def _bytes(target: Path, relative: str) -> bytes | None:
    try:
        # Non-blocking and not through a link: a FIFO put there must not hang the call, and a
        # link put in the target's place since it was resolved is not followed out.
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EditRefused(f"{relative} cannot be opened: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise EditRefused(f"{relative} is not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise EditRefused(f"{relative} is {info.st_size} bytes, over the file tools' limit of {MAX_FILE_BYTES} bytes")
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)


def _now(path: str) -> ShownFile:
    """What the file at the real ``path`` is now (its SHA-256; None when absent or unreadable)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return ShownFile(path=path, sha256=None)
    return ShownFile(path=path, sha256=hashlib.sha256(data).hexdigest())


def _write_atomically(target: Path, data: bytes, expected: ShownFile | None) -> None:
    """``data`` written to a temporary file beside ``target``, then renamed over it, all
    through a descriptor of the directory (checked to be still where it was resolved), so a
    link swapped in meanwhile is not followed out; the file's mode kept. ``expected``: the
    file is checked again just before the rename."""
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    directory = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if _opened_as(directory) not in (None, str(parent)):
            raise EditRefused(f"{parent} moved while the change was made; nothing written")
        try:
            mode: int | None = stat.S_IMODE(os.stat(target.name, dir_fd=directory, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            mode = None
        temporary = f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        fd = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            _NEW_FILE_MODE if mode is None else 0o600,
            dir_fd=directory,
        )
        try:
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    if mode is not None:
                        os.fchmod(handle.fileno(), mode)
                    os.fsync(handle.fileno())
                if expected is not None and _now(str(target)) != expected:
                    raise EditRefused(FILE_CHANGED)
                os.replace(temporary, target.name, src_dir_fd=directory, dst_dir_fd=directory)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=directory)
                raise
            os.fsync(directory)
        except OSError as exc:
            raise EditRefused(f"{target.name} could not be written: {exc.strerror or exc}; nothing written") from None
    finally:
        os.close(directory)


def _opened_as(fd: int) -> str | None:
    """The real path of an open directory, as the kernel names it (None without ``/proc``)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
