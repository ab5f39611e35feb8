"""Remembered approvals and the pure lookup that decides whether one covers a call (SPEC A5).

A ``session`` grant covers the same tool for the same agent in the same chat;
an ``always`` grant covers it anywhere in the world. For ``shell_cmd`` a grant
is narrowed to the commands that were approved, by exact name: a later command is
covered only when every command it would run was approved, so approving ``ls``
never approves ``ls && rm -rf ~``, ``./ls`` or ``PATH=. ls``. A line the policy
does not fully understand is never generalised and never covered. For the built-in file tools
(``read_file``, ``list_files``) a grant is narrowed to the paths the person saw, compared after
lexical normalisation (``./.env`` is ``.env``): approving ``.env`` never approves
``.ssh/id_rsa``. A file-tool grant stored without paths covers nothing.

A shell line that writes files by redirection is covered only where it writes what the person
saw written (SPEC C3): the grant records its redirections' targets as the runtime resolves them
inside the working directory (``Resolve``), and covers a later line only when every target of
that line resolves to one of them. A target outside the working directory, one known only at
run time (``> $F``, ``> ~/x``), a line that writes another way (``sed -i``, ``tee FILE``, the
script of ``bash -c``) or changes directory first (``cd sub && echo x > f``) is never covered,
and neither is any writing line by a grant stored before targets were recorded.
No I/O here: the caller loads the grants once per call, and resolves paths (``Resolve``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal

from agentworld.models import World, new_id, utc_now
from agentworld.shell import SHELL_TOOL

GrantScope = Literal["session", "always"]

Resolve = Callable[[str], "str | None"]
"""Where a shell call's redirection target leads, relative to the working directory, as the
shell would open it (the runtime's is ``runtime/path_views.redirect_resolver``); None when it
leads outside the working directory or cannot be resolved."""

_DIRECTORY_CHANGES = frozenset({"cd", "pushd", "popd"})
_NOWHERE = "/dev/null"

FILE_TOOLS = frozenset({"read_file", "list_files", "write_file", "edit_file"})
"""The built-in tools that open the ``path`` they are given; their grants name the paths
(the same set as ``runtime/path_views.py``)."""


def normal_path(path: str) -> str:
    """``path`` normalised lexically: ``.`` segments and repeated or trailing slashes dropped,
    ``..`` kept (it depends on what the segment before it links to); ``.`` for the directory."""
    segments = [s for s in path.split("/") if s not in ("", ".")]
    joined = "/".join(segments)
    if path.startswith("/"):
        return "/" + joined
    return joined or "."


def file_path(tool_name: str, arguments: dict[str, Any]) -> str | None:
    """The normalised path a file tool's call opens (``list_files``: ``.`` by default, as the
    tool does); None when it names none."""
    path = arguments.get("path")
    if tool_name == "list_files" and not path:
        path = "."
    return normal_path(path) if isinstance(path, str) and path else None


@dataclass(frozen=True, slots=True)
class ShellShape:
    """What a shell call would run: the grant keys of its commands, whether it writes files
    (by redirection, or as ``sed -i`` does), and where. A key is the command name exactly as
    written (``ls``, never ``./ls``), or ``bash -c`` for a shell whose script was read too."""

    roots: frozenset[str]
    redirects: bool
    targets: frozenset[str] | None = None
    """The files its redirections write, as ``Resolve`` names them (empty: it writes none);
    None when it writes in a way they do not name, or one cannot be resolved inside."""


def _line(arguments: dict[str, Any]) -> str | None:
    """The command line a ``shell_cmd`` call runs (``parameters`` quoted onto ``command``)."""
    from agentworld.shell.split import command_line

    command = arguments.get("command")
    parameters = arguments.get("parameters")
    if not isinstance(command, str):
        return None
    if parameters is not None and not (
        isinstance(parameters, list) and all(isinstance(p, str) for p in parameters)
    ):
        return None
    return command_line(command, parameters)


def shell_shape(arguments: dict[str, Any], *, resolve: Resolve | None = None) -> ShellShape | None:
    """Parse a ``shell_cmd`` call; None when no grant may cover it: a line not fully understood,
    a command name known only at run time, ``VAR=value`` prefixes, or a program that runs code
    we cannot read (``sh <<EOF``, ``python -c``). Without ``resolve`` no target is known."""
    from agentworld.shell.commands import analyze
    from agentworld.shell.directories import moved_into

    line = _line(arguments)
    if line is None:
        return None
    analysis = analyze(line)
    # As it runs: in the call's ``directory`` (``git`` there reads a configuration nobody saw).
    parts = moved_into(analysis.parts, arguments.get("directory"))
    if not analysis.understood or not parts or any(p.key is None or p.assignments for p in parts):
        return None
    roots = frozenset(p.key for p in parts if p.key is not None)
    if not analysis.has_redirection:
        return ShellShape(roots, False, frozenset())
    writes = _redirect_writes(line)
    targets: frozenset[str] | None = None
    if writes is not None and resolve is not None and not any(p.root in _DIRECTORY_CHANGES for p in parts):
        resolved = {resolve(target) for target in writes.targets}
        targets = None if None in resolved else frozenset(t for t in resolved if t is not None)
    return ShellShape(roots, True, targets)


@dataclass(frozen=True, slots=True)
class _Writes:
    """A line's redirections that write files: their targets as written (after quote removal),
    and the same line with each of them made ``/dev/null``."""

    targets: tuple[str, ...]
    quiet: str


@lru_cache(maxsize=256)
def _redirect_writes(line: str) -> _Writes | None:
    """The files ``line`` writes, when redirections with literal targets are the only way it
    writes any; else None. Checked by the shell analysis itself: the line with each such target
    made ``/dev/null`` must write nothing at all (``sed -i``, ``tee FILE`` and the redirections
    inside ``bash -c '…'`` still do)."""
    from agentworld.shell.commands import analyze
    from agentworld.shell.syntax import NotUnderstood, read_commands

    try:
        commands = read_commands(line)
    except NotUnderstood:
        return None
    spans: dict[tuple[int, int], str] = {}
    for command in commands:  # an enclosing group's redirections come with each of its commands
        for redirect in command.redirects:
            if redirect.writes_file:
                if not redirect.target.literal:
                    return None
                spans[(redirect.target.start, redirect.target.end)] = redirect.target.value
    quiet = line
    for start, end in sorted(spans, reverse=True):
        quiet = quiet[:start] + _NOWHERE + quiet[end:]
    before, after = analyze(line), analyze(quiet)
    if not after.understood or after.has_redirection:
        return None
    if [(p.key, len(p.argv)) for p in before.parts] != [(p.key, len(p.argv)) for p in after.parts]:
        return None  # the same commands with as many words, or the targets were misread
    return _Writes(tuple(spans.values()), quiet)


def written_targets(arguments: dict[str, Any]) -> tuple[str, ...] | None:
    """The files a ``shell_cmd`` call's redirections write, as written (after quote removal);
    None when it writes files in a way no grant can name."""
    line = _line(arguments)
    writes = _redirect_writes(line) if line is not None else None
    return writes.targets if writes is not None else None


def without_writes(arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The ``shell_cmd`` call as it would be with its redirections writing nowhere (each target
    ``/dev/null``), for judging everything about a line but where it writes; None when it
    writes no file, or not by redirections alone."""
    line = _line(arguments)
    writes = _redirect_writes(line) if line is not None else None
    if writes is None or not writes.targets:
        return None
    rest = {k: v for k, v in arguments.items() if k not in ("command", "parameters")}
    return {**rest, "command": writes.quiet}


@dataclass(frozen=True, slots=True)
class Grant:
    grant_id: str
    world: str
    scope: GrantScope
    tool_name: str
    agent: str | None = None
    chat_id: str | None = None
    roots: frozenset[str] | None = None
    """For shell_cmd: the approved root commands; for read_file and list_files: the approved
    paths, normalised (``normal_path``). None on a file-tool grant: it covers nothing."""
    allow_redirection: bool = False
    """For shell_cmd: the approved line wrote files by redirection, to ``redirect_targets``."""
    approval_id: str | None = None
    created_at: datetime | None = None
    redirect_targets: frozenset[str] | None = None
    """For shell_cmd: the files the approved line's redirections wrote, relative to the
    working directory as resolved when it was approved (``Resolve``); None when it wrote none,
    or in a way that could not be named (and on grants stored before targets were recorded):
    such a grant covers no line that writes files."""

    def covers(
        self,
        tool_name: str,
        *,
        agent: str,
        chat_id: str,
        shape: ShellShape | None,
        path: str | None = None,
    ) -> bool:
        """Whether the grant covers a call; ``shape`` for shell_cmd, ``path`` (``file_path``)
        for a file tool."""
        if tool_name != self.tool_name:
            return False
        if self.scope == "session" and (agent.lower() != (self.agent or "").lower() or chat_id != self.chat_id):
            return False
        if tool_name in FILE_TOOLS:
            return path is not None and self.roots is not None and path in self.roots
        if tool_name != SHELL_TOOL:
            return True
        if shape is None or self.roots is None:
            return False
        if shape.redirects and not (
            self.redirect_targets is not None
            and shape.targets is not None
            and shape.targets <= self.redirect_targets
        ):
            return False
        return shape.roots <= self.roots


def find_covering_grant(
    grants: Iterable[Grant],
    tool_name: str,
    arguments: dict[str, Any],
    *,
    agent: str,
    chat_id: str,
    resolve: Resolve | None = None,
) -> Grant | None:
    """The first grant that covers the call, if any. The shell command is parsed at most once;
    ``resolve`` places its redirections' targets (without it, no line that writes is covered)."""
    shape: ShellShape | None = None
    parsed = False
    for grant in grants:
        if grant.tool_name != tool_name:
            continue
        if tool_name == SHELL_TOOL and not parsed:
            shape, parsed = shell_shape(arguments, resolve=resolve), True
        path = file_path(tool_name, arguments) if tool_name in FILE_TOOLS else None
        if grant.covers(tool_name, agent=agent, chat_id=chat_id, shape=shape, path=path):
            return grant
    return None


def grant_for(
    scope: GrantScope,
    *,
    world: str,
    tool_name: str,
    arguments: dict[str, Any],
    agent: str,
    chat_id: str,
    approval_id: str,
    views: Sequence[dict[str, Any]] = (),
    resolve: Resolve | None = None,
) -> Grant | None:
    """The grant an approval with ``scope`` creates; None when the call cannot be generalised
    (an unparseable shell command, a file tool's call without a path: approved once, never
    remembered). ``views``: the same call as it really runs (``runtime/path_views.py``); a file
    tool's grant names their paths too, since the runtime asks a grant to cover each of them.
    ``resolve``: where a shell line's redirections write, recorded as the grant's targets."""
    roots: frozenset[str] | None = None
    targets: frozenset[str] | None = None
    if tool_name in FILE_TOOLS:
        paths = [file_path(tool_name, call) for call in (arguments, *views)]
        if any(path is None for path in paths):
            return None
        roots = frozenset(path for path in paths if path is not None)
    elif tool_name == SHELL_TOOL:
        shape = shell_shape(arguments, resolve=resolve)
        if shape is None:
            return None
        roots, targets = shape.roots, shape.targets or None
    return Grant(
        grant_id=new_id("grant_"),
        world=world,
        scope=scope,
        tool_name=tool_name,
        agent=agent if scope == "session" else None,
        chat_id=chat_id if scope == "session" else None,
        roots=roots,
        allow_redirection=targets is not None,
        approval_id=approval_id,
        created_at=utc_now(),
        redirect_targets=targets,
    )


@dataclass(frozen=True, slots=True)
class PolicyState:
    """What authorizing a call reads from storage: the world's settings and its grants in
    force. The runtime reads it once per batch of tool calls, in the transaction that checks
    the batch's call ids, so authorizing each call reads nothing more."""

    world: World
    grants: tuple[Grant, ...]
