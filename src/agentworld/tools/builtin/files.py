"""Read-only file tools (SPEC T2), confined to the world's working directory.

Confinement (``tools/confinement.py``, shared with ``shell_cmd``) is checked on
the resolved path, after symlinks: ``..``, absolute paths elsewhere and links
that lead outside the directory are all refused the same way.
Reads are capped so a huge file cannot flood the model's context.
"""

from __future__ import annotations

import os
from typing import Any

from agentworld.tools.confinement import confined_path
from agentworld.tools.registry import ToolContext

READ_CAP = 256 * 1024
LIST_CAP = 1000

async def read_file(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    target = confined_path(args["path"], context.working_dir)
    if not target.is_file():
        raise FileNotFoundError(f"{args['path']!r} is not a file")
    size = target.stat().st_size
    with target.open("rb") as handle:
        data = handle.read(READ_CAP)
    result: dict[str, Any] = {
        "path": args["path"],
        "size": size,
        "content": data.decode("utf-8", errors="replace"),
    }
    if size > READ_CAP:
        result["truncated"] = f"only the first {READ_CAP} of {size} bytes are shown"
    return result


async def list_files(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
    target = confined_path(args.get("path") or ".", context.working_dir)
    if not target.is_dir():
        raise NotADirectoryError(f"{args.get('path')!r} is not a directory")
    entries: list[dict[str, Any]] = []
    names = sorted(os.listdir(target))
    for name in names[:LIST_CAP]:
        entry = target / name
        kind = "symlink" if entry.is_symlink() else "directory" if entry.is_dir() else "file"
        item: dict[str, Any] = {"name": name, "type": kind}
        if kind == "file":
            item["size"] = entry.stat().st_size
        entries.append(item)
    result: dict[str, Any] = {"path": args.get("path") or ".", "entries": entries}
    if len(names) > LIST_CAP:
        result["truncated"] = f"only the first {LIST_CAP} of {len(names)} entries are shown"
    return result

