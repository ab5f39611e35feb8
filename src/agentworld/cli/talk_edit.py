"""Editing a call before approving it in ``agentworld talk`` (SPEC F2), apart from the terminal.

``edit_plan`` says how a request's arguments are edited: a ``shell_cmd`` call whose command line
is short, one line and plain is edited in place as that line (its parameters quoted into it, so
what is edited is exactly what runs); any other call, or a long or multi-line command, as its
arguments in JSON (in ``$VISUAL``/``$EDITOR``, else in place). ``edited_call`` reads the text
back: the arguments to run, or None when nothing changed (the call is approved as it is), or
the reason the text is not a call.

Secrets stay masked: an argument holding a value masked as a secret is edited as the person
was shown it (``[REDACTED:kind]``), which the runtime reads back as the value it hides where the
mask is kept (and refuses where a mask stands for nothing), so a secret never reaches the screen
or the editor's file. Every other argument is edited as the model wrote it, with characters
that could disguise text on a terminal written as JSON ``\\u`` escapes (the same value).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agentworld.approval.shell_view import first_control
from agentworld.redaction import redact
from agentworld.shell import SHELL_TOOL
from agentworld.shell.split import command_line

INLINE_LIMIT = 160
"""The longest command line edited in place; a longer one goes to the editor as JSON."""

EditForm = Literal["line", "json"]


@dataclass(frozen=True, slots=True)
class EditPlan:
    form: EditForm
    """``line``: the shell command line, in place; ``json``: the arguments as JSON."""
    text: str
    """What the edit starts from."""
    original: dict[str, Any]
    """The call's arguments as the edit starts from them: as the model wrote them, but for
    those holding a secret, which are as the person was shown them (masked)."""


@dataclass(frozen=True, slots=True)
class CannotEdit:
    reason: str


@dataclass(frozen=True, slots=True)
class Edited:
    arguments: dict[str, Any] | None
    """The arguments to run; None when the edit changed nothing."""


@dataclass(frozen=True, slots=True)
class NotACall:
    reason: str


def edit_plan(
    tool_name: str, arguments: str, shown: Mapping[str, Any], *, inline_limit: int = INLINE_LIMIT
) -> EditPlan | CannotEdit:
    """How the call ``tool_name(arguments)`` (its JSON text; ``shown``: its arguments as the
    person was shown them, secrets masked) is edited, or why it cannot be."""
    try:
        written = json.loads(arguments)
    except ValueError:
        written = None
    if not isinstance(written, dict):
        return CannotEdit("its arguments are not a JSON object: deny it, or approve it as it is")
    masked = {key for key, value in written.items() if redact({key: value}) != {key: value}}
    original = {key: (shown[key] if key in shown else redact({key: value})[key]) if key in masked else value
                for key, value in written.items()}  # fmt: skip
    line = None if masked & {"command", "parameters"} else _shell_line(tool_name, original)
    if line is not None and len(line) <= inline_limit and first_control(line) is None:
        return EditPlan("line", line, original)
    return EditPlan("json", arguments_json(original), original)


def _shell_line(tool_name: str, arguments: dict[str, Any]) -> str | None:
    """A shell call's full command line, when its arguments are ones this edit keeps whole."""
    command, parameters = arguments.get("command"), arguments.get("parameters")
    if tool_name != SHELL_TOOL or not isinstance(command, str):
        return None
    if parameters is not None and not (isinstance(parameters, list) and all(isinstance(p, str) for p in parameters)):
        return None
    if set(arguments) - {"command", "parameters", "directory"}:
        return None
    return command_line(command, parameters)


def arguments_json(arguments: dict[str, Any]) -> str:
    """The arguments as JSON to edit: indented, readable text as it is, and every character
    that could move the cursor or reorder a line written as a ``\\u`` escape (the same value)."""
    text = json.dumps(arguments, ensure_ascii=False, indent=2)
    return "".join(json.dumps(c)[1:-1] if first_control(c, allow="\n") is not None else c for c in text) + "\n"


def edited_call(plan: EditPlan, text: str) -> Edited | NotACall:
    """The edited text read back as the call's arguments (None: unchanged)."""
    if plan.form == "line":
        line = text.strip()
        if not line:
            return NotACall("the command line is empty")
        if line == plan.text:
            return Edited(None)
        kept = {k: v for k, v in plan.original.items() if k == "directory"}
        return Edited({"command": line, **kept})
    try:
        arguments = json.loads(text)
    except ValueError as exc:
        return NotACall(f"the edited arguments are not JSON ({exc})")
    if not isinstance(arguments, dict):
        return NotACall("the edited arguments must be a JSON object")
    return Edited(None if arguments == plan.original else arguments)


def editor_command(environ: Mapping[str, str]) -> list[str] | None:
    """The editor a person chose (``VISUAL``, else ``EDITOR``) as a command, or None."""
    for name in ("VISUAL", "EDITOR"):
        chosen = environ.get(name, "").strip()
        if chosen:
            try:
                return shlex.split(chosen)
            except ValueError:
                return [chosen]
    return None
