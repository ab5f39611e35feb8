"""``pathPrefix``: a rule for file tools that matches a call whose path lies inside a directory
(or is a file) of the working directory (SPEC P3, F1). Pure: paths are compared as written,
normalised lexically; the runtime also evaluates the path a call really opens (symlinks
followed, ``runtime/path_views.py``) and the more severe answer counts, so a link out of the
prefix never borrows its ALLOW.
"""

from __future__ import annotations

import posixpath
from typing import Any

PATH_TOOLS = frozenset({"read_file", "list_files", "write_file", "edit_file"})
"""The built-in tools whose ``path`` a ``pathPrefix`` rule reads."""


def normal_prefix(prefix: str) -> str:
    """A rule's ``pathPrefix`` normalised (``./src/`` is ``src``, ``.`` the whole working
    directory); refused when it is empty, absolute or leads out of the working directory."""
    if not prefix.strip():
        raise ValueError("pathPrefix must not be empty (use \".\" for the whole working directory)")
    if prefix.startswith("/"):
        raise ValueError(f"pathPrefix {prefix!r} must be relative to the working directory")
    normal = posixpath.normpath(prefix)
    if _escapes(normal):
        raise ValueError(f"pathPrefix {prefix!r} leads out of the working directory")
    return normal


def path_within(tool_name: str, arguments: dict[str, Any], prefixes: tuple[str, ...]) -> bool:
    """Whether the call's ``path`` (``list_files``: ``.`` by default) is inside one of the
    normalised ``prefixes``; never for an absolute path or one that leads out (``..``)."""
    path = arguments.get("path")
    if tool_name == "list_files" and path is None:
        path = "."
    if not isinstance(path, str) or not path or path.startswith("/") or "\0" in path:
        return False
    normal = posixpath.normpath(path)
    if _escapes(normal):
        return False
    return any(prefix == "." or normal == prefix or normal.startswith(prefix + "/") for prefix in prefixes)


def _escapes(normal: str) -> bool:
    return normal == ".." or normal.startswith("../")
