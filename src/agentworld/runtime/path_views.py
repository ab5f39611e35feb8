"""The file a file tool's call really opens, for the policy to see as well.

A rule over ``read_file``'s ``path`` matches the path as the model wrote it. When
``notes.txt`` is a symlink to ``.env``, the tool opens ``.env``: a rule that asks before
secret files are read (``defaults.toml``), or a world's DENY rule for a directory, must see
that too. So a built-in file tool's call is also evaluated with its path resolved inside the
working directory, as ``tools/confinement.py`` resolves it when the tool runs, and the more
severe decision of the two counts. The call shown to a person and the call that runs stay as
the model wrote them.

A shell line's redirections are placed the same way (``redirect_resolver``), for the grants
that name the files a line may write (``approval.grants``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentworld.policy.rules import PolicyDecision
from agentworld.tools.confinement import resolved_inside

if TYPE_CHECKING:
    from agentworld.policy.engine import PolicyResult
    from agentworld.tools.registry import Tool

FILE_TOOLS = frozenset({"read_file", "list_files", "write_file", "edit_file"})
"""The built-in tools that open the ``path`` they are given (``list_files``: ``.`` by default)."""

_SEVERITY = {PolicyDecision.ALLOW: 0, PolicyDecision.ASK_USER: 1, PolicyDecision.DENY: 2}


def resolved_views(tool: Tool, arguments: dict[str, Any], working_dir: str | None) -> list[dict[str, Any]]:
    """``arguments`` with the path replaced by where it really leads, when that differs (a
    symlink, ``..``, an absolute path inside); empty for every other tool and call."""
    if tool.server is not None or tool.location != "server":
        return []
    return file_call_views(tool.name, arguments, working_dir)


def file_call_views(
    tool_name: str, arguments: dict[str, Any], working_dir: str | None
) -> list[dict[str, Any]]:
    """:func:`resolved_views` for a call known to name a built-in tool (``policy test`` without
    a world knows no registry, only the built-ins' names; its working directory is the current
    one)."""
    if tool_name not in FILE_TOOLS:
        return []
    path = arguments.get("path") or ("." if tool_name == "list_files" else None)
    if not isinstance(path, str):
        return []
    real = resolved_inside(path, working_dir)
    if real is None or real == path:
        return []
    return [{**arguments, "path": real}]


def redirect_resolver(arguments: dict[str, Any], working_dir: str | None) -> Callable[[str], str | None]:
    """Where a ``shell_cmd`` call's redirection target leads, relative to the working directory,
    as the shell opens it from the call's ``directory`` (``approval.grants.Resolve``); None
    outside it. A ``directory`` that is not a string places nothing."""
    directory = arguments.get("directory")
    if directory is not None and not isinstance(directory, str):
        return lambda target: None
    start = directory or "."

    def resolve(target: str) -> str | None:
        return resolved_inside(posixpath.join(start, target), working_dir)

    return resolve


def most_severe(
    evaluate: Callable[[dict[str, Any]], PolicyResult],
    arguments: dict[str, Any],
    views: Sequence[dict[str, Any]],
) -> PolicyResult:
    """The engine's answer for ``arguments``, unless one of ``views`` gets a more severe one:
    then that, its reason saying which file the call opens."""
    chosen = evaluate(arguments)
    for view in views:
        result = evaluate(view)
        if _SEVERITY[result.decision] > _SEVERITY[chosen.decision]:
            opened = f"{arguments.get('path') or '.'!r} opens {view['path']!r}"
            reason = f"{opened}: {result.reason}" if result.reason else opened
            chosen = replace(result, reason=reason)
    return chosen
