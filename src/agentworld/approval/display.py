"""What a person is shown when asked to approve a tool call (SPEC A1, A9; "the person sees
exactly what runs").

For ``shell_cmd`` the request carries the full command line (``command`` with its
``parameters`` quoted as they will run), the directory it runs in, and the list of commands
the policy found in it — or a warning that the line was not fully understood. Secrets are
masked in place (``[REDACTED:kind]``) by a redaction that never touches shell syntax; if
masking would still change how the line reads, the warning says so and the parsed commands
(masked word by word) are what the person judges; and when the line expands a variable whose
assigned value was masked (``T_TOKEN=victim; rm "$T_TOKEN"``), the warning says that what
runs depends on a value not shown. Whenever masking changed the line at all, the warning says
that a masked value is part of what runs (``echo Bearer <base64> | base64 -d | sh`` runs the
hidden value), so a masked span never reads as harmless. Control characters, bidirectional
overrides and zero-width characters are shown escaped, so terminal escape sequences in an
argument cannot make the prompt display another command. Pure functions, no I/O.
"""

from __future__ import annotations

import json
import posixpath
import re
import string
from pathlib import PurePosixPath
from typing import Any

from agentworld.approval.shell_view import ShellView, escape_controls
from agentworld.redaction import redact, redact_text
from agentworld.shell import SHELL_TOOL
from agentworld.shell.commands import ShellAnalysis, analyze
from agentworld.shell.split import command_line

_EXPANDED_NAME = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_MASKED_NOTE = (
    "This line holds a value masked here as a secret ([REDACTED:…]): it is part of what runs, "
    "and it is not shown."
)


TEXT_ARGUMENTS = {"write_file": ("content",), "edit_file": ("old", "new")}
"""The arguments of file tools that carry a file's text: their line breaks and tabs are shown as
they are, so a person who corrects the text edits lines, not escapes (the diff shows the
change). Every other value, the path included, has them escaped."""


def shown(value: Any, *, keep: str = "") -> Any:
    """JSON-like data as a person may see it: secrets masked, control characters escaped (but
    those of ``keep``)."""
    masked = redact(value)
    return _escape_all(masked, keep)


def shown_arguments(tool_name: str, arguments: Any) -> Any:
    """A call's arguments as its approval shows them (``shown``); a file's text keeps its lines,
    and has this process's secret values masked too, as the diff of it is."""
    view = shown(arguments)
    texts = TEXT_ARGUMENTS.get(tool_name, ())
    if not texts or not isinstance(arguments, dict) or not isinstance(view, dict):
        return view
    from agentworld.process_secrets import redact_process_text  # as the diff beside it is masked

    for key in texts:
        if isinstance(arguments.get(key), str) and key in view:
            view[key] = escape_controls(redact_process_text(arguments[key]), keep="\n\t")
    return view


def _escape_all(value: Any, keep: str) -> Any:
    if isinstance(value, str):
        return escape_controls(value, keep=keep)
    if isinstance(value, dict):
        return {escape_controls(str(k)): _escape_all(v, keep) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_escape_all(v, keep) for v in value]
    return value


def shell_view(arguments: dict[str, Any], *, working_dir: str) -> ShellView:
    """What a ``shell_cmd`` call will run, masked and escaped for display."""
    command = arguments.get("command")
    parameters = arguments.get("parameters")
    line = command_line(command if isinstance(command, str) else "", _strings(parameters))
    masked = redact_text(line)
    analysis = analyze(line)
    note = ""
    if not analysis.understood:
        note = f"Not fully understood ({analysis.reason}): read the whole line before approving."
    elif masked != line and not _same_structure(analysis, analyze(masked)):
        note = "Masking secrets would change how this line reads: judge the commands listed."
    if masked != line:
        note = f"{note} {_MASKED_NOTE}".strip()
    if hidden := _masked_values_used(analysis, line):
        names = ", ".join(f"${name}" for name in hidden)
        used = f"The line uses {names}, whose value is masked as a secret: what runs depends on a value not shown here."
        note = f"{note} {used}".strip()
    commands = tuple(
        escape_controls(redact_text(part.text))
        for part in analysis.parts
        if part.argv or part.assignments or analysis.understood
    )
    return ShellView(
        command_line=escape_controls(masked),
        directory=escape_controls(_directory(arguments.get("directory"), working_dir)),
        commands=commands,
        understood=analysis.understood,
        note=note,
    )


def approval_message(
    tool_name: str,
    template: str | None,
    agent: str,
    arguments: dict[str, Any],
    *,
    working_dir: str,
) -> tuple[str, ShellView | None]:
    """The sentence shown to the person, and for ``shell_cmd`` the view it was made from."""
    if tool_name == SHELL_TOOL:
        view = shell_view(arguments, working_dir=working_dir)
        return f"{agent} wants to {view.sentence()}", view
    args = shown(arguments)
    if template:
        fields = {k: v if isinstance(v, str) else json.dumps(v) for k, v in args.items()}
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
        if names <= fields.keys():
            return f"{agent}: {template.format_map(fields)}", None
    return f"{agent} wants to run {escape_controls(tool_name)} with {json.dumps(args)}", None


def _strings(parameters: Any) -> list[str] | None:
    if isinstance(parameters, list) and all(isinstance(p, str) for p in parameters):
        return parameters
    return None


def _directory(directory: Any, working_dir: str) -> str:
    if not isinstance(directory, str) or not directory:
        return working_dir
    return str(PurePosixPath(working_dir) / directory)


def _masked_values_used(analysis: ShellAnalysis, line: str) -> list[str]:
    """The variables the line assigns a value that masking hides, and also expands: their
    value decides what runs (a file name, a host), so hiding it hides what runs."""
    masked: set[str] = set()
    for part in analysis.parts:
        assignments = list(part.assignments)
        if part.argv and posixpath.basename(part.argv[0]) in _DECLARATIONS:
            assignments += part.argv[1:]  # export NAME=value
        for text in assignments:
            name, equals, value = text.partition("=")
            if equals and value and redact_text(text) != text:
                masked.add(name.rstrip("+"))
    return sorted(masked & set(_EXPANDED_NAME.findall(line)))


def _same_structure(a: ShellAnalysis, b: ShellAnalysis) -> bool:
    """Whether two readings run the same commands: same names, same number of words."""
    if a.understood != b.understood or len(a.parts) != len(b.parts):
        return False
    return all(
        p.argv[:1] == q.argv[:1] and len(p.argv) == len(q.argv) and p.opacity == q.opacity
        for p, q in zip(a.parts, b.parts, strict=True)
    )
