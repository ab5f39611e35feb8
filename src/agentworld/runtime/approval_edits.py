"""A person's correction of a call while approving it (SPEC F2).

The edited call is checked before the answer is stored, as the model's own calls are before they
are asked about: it must be a JSON object the tool's schema and its own checks accept, and the
policy in force must not deny it. An ASK_USER is what this very approval answers, so it passes;
a DENY refuses the edit, and nothing is stored: the request still waits, to be denied or edited
again. What passes is an ``EditedCall``: the text that runs and the views of it that the
approval's event, the audit log and the model read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agentworld.approval.decisions import Allow, AskUser, Deny
from agentworld.errors import InvalidArgumentsError, PolicyDeniedError
from agentworld.models import World
from agentworld.models.pending import PendingApproval
from agentworld.models.text import lone_surrogate_at
from agentworld.redaction import KNOWN_MIN_LENGTH, redact
from agentworld.runtime.authorizer import named_tool, schema_problem
from agentworld.runtime.policy_files import kept_from_tools
from agentworld.runtime.turn_context import TurnContext
from agentworld.shell import SHELL_TOOL
from agentworld.tools.registry import Tool, ToolContext
from agentworld.tools.validation import ArgumentError, parse_arguments


@dataclass(frozen=True)
class EditedCall:
    """A call as a person corrected it: ``arguments`` (JSON text) is what runs; ``shown`` the
    arguments as a person sees them (secrets masked, control characters escaped), for the
    approval event and the audit log; ``for_model`` the arguments with secrets masked, as the
    agent's memory records the call; ``shell`` the command line's view (``shell_cmd`` only);
    ``hidden`` the values the masking hid (value -> kind), masked in the result too."""

    arguments: str
    shown: dict[str, Any]
    for_model: dict[str, Any]
    shell: dict[str, Any] | None = None
    hidden: Mapping[str, str] = field(default_factory=dict)

    def masked(self, result: str) -> str:
        """``result`` with the secrets the person wrote into the call masked: a tool may echo
        its arguments (``shell_cmd`` does), and the model wrote none of them."""
        from agentworld.tools.environment import redact_secrets, with_json_forms

        return redact_secrets(result, with_json_forms(self.hidden)) if self.hidden else result

    def audit_detail(self, shown: dict[str, Any], original: dict[str, Any]) -> dict[str, Any]:
        """The decision's audit detail: what the person was shown (``shown``), the arguments
        the model wrote as shown (``original``) beside this edit, and the edited line's view."""
        detail = {**shown, "originalArgs": original, "edited": True}
        if self.shell is not None:
            detail["editedShell"] = self.shell
        return detail


async def checked_edit(
    ctx: TurnContext, world: World, pending: PendingApproval, arguments: Mapping[str, Any]
) -> EditedCall | None:
    """``arguments`` as the call ``pending`` asks about, once they pass the tool's checks and
    the policy in force; None when they are the model's own (nothing was corrected). Raises
    ``InvalidArgumentsError`` for arguments the tool refuses and ``PolicyDeniedError`` for a
    call the policy denies; the caller then stores nothing."""
    try:
        written = parse_arguments(pending.arguments)
    except ArgumentError:
        written = {}  # the model's own arguments do not read: anything readable is a correction
    parsed = as_meant(_parsed(arguments), written, pending.tool_args)
    if parsed == written:
        return None  # approved as asked: authorized again when it runs, as every approval
    tool = named_tool(await ctx.tools_for(world), pending.tool_name)
    if not isinstance(tool, Tool):
        raise InvalidArgumentsError(f"the call cannot be edited: {tool}")
    if (problem := schema_problem(tool, parsed)) is not None:
        raise InvalidArgumentsError(f"the edited arguments do not fit the tool: {problem}")
    if tool.preview is not None and parsed.get("path") != written.get("path"):
        # The diff shown, and the file check the call runs under, are of the file first named.
        raise InvalidArgumentsError(
            "the file of a change cannot be corrected (the diff shown is of "
            f"{written.get('path')!r}): deny the call and tell the agent which file to change"
        )
    protected, private = kept_from_tools(ctx.storage.url)
    context = ToolContext.for_world(
        world, chat_id=pending.chat_id, agent=pending.agent, protected=protected, private=private
    )
    if tool.precheck is not None and (problem := tool.precheck(parsed, context)):
        raise InvalidArgumentsError(f"the edited call cannot run: {tool.name}: {problem}")
    approving = replace(context, approval_id=pending.tool_call_id, correcting=True)
    match await ctx.authorizer.authorize(tool, parsed, approving):
        case Deny(reason=reason):
            raise PolicyDeniedError(
                f"the edited call is refused: {reason}; nothing was answered, and approval "
                f"{pending.tool_call_id} still waits"
            )
        case Allow() | AskUser():
            pass
    return edited_call(pending.tool_name, json.dumps(parsed, ensure_ascii=False), world.working_dir)


def edited_call(tool_name: str, arguments: str, working_dir: str | None) -> EditedCall:
    """The views of edited ``arguments`` (JSON text of an object, as ``checked_edit`` made it)."""
    from agentworld.approval.display import (  # the approval views (see tool_calls)
        shell_view,
        shown_arguments,
    )

    parsed = parse_arguments(arguments)
    view = None
    if tool_name == SHELL_TOOL:
        view = shell_view(parsed, working_dir=working_dir or os.getcwd()).to_json()
    for_model = redact(parsed)
    return EditedCall(
        arguments=arguments, shown=shown_arguments(tool_name, parsed), for_model=for_model, shell=view,
        hidden=_hidden_values(parsed, for_model),
    )


def edit_of(call: PendingApproval, working_dir: str | None) -> EditedCall | None:
    """The correction a person made to the approved ``call`` (its stored answer), or None.
    Stored text that does not read back (a row changed by hand) still runs as stored -- never
    as the model wrote it -- and fails as unreadable arguments do, shown as the text it is."""
    edited = call.edited_arguments
    if edited is None:
        return None
    try:
        return edited_call(call.tool_name, edited, working_dir)
    except ArgumentError:
        from agentworld.approval.display import shown

        return EditedCall(arguments=edited, shown=shown({"unreadable": edited}), for_model={"unreadable": edited})


def edit_note(edit: EditedCall) -> str:
    """The line the model reads before the edited call's result: a person changed its
    arguments, and to what (secrets masked)."""
    return (
        "Note: a person changed this call's arguments before approving it; "
        f"it was approved as: {json.dumps(edit.for_model, ensure_ascii=False)}"
    )


_MASK = re.compile(r"\[REDACTED:([^\]]*)\]")


def _hidden_values(raw: Any, masked: Any) -> dict[str, str]:
    """The values ``redact`` hid in ``raw`` (``masked`` is ``redact(raw)``), value -> kind: where
    a string was masked, its masks are matched back against the raw text. Values shorter than
    ``KNOWN_MIN_LENGTH`` are left out, as masking every ``1`` would garble a result."""
    found: dict[str, str] = {}
    stack: list[tuple[Any, Any]] = [(raw, masked)]
    while stack:
        value, shown = stack.pop()
        if isinstance(value, dict) and isinstance(shown, dict):
            stack.extend((item, shown.get(key)) for key, item in value.items())
        elif isinstance(value, list) and isinstance(shown, list):
            stack.extend(zip(value, shown, strict=False))
        elif isinstance(shown, str) and value != shown and _MASK.search(shown):
            found.update(_hidden_in(value, shown) or ())
    return {value: kind for value, kind in found.items() if len(value) >= KNOWN_MIN_LENGTH}


def as_meant(edited: dict[str, Any], written: dict[str, Any], shown: dict[str, Any]) -> dict[str, Any]:
    """The edit as the person meant it, who corrected what they were shown (masked, escaped):
    an argument left exactly as shown is the model's, as written; a masked value kept in an
    edited text (``[REDACTED:kind]``, the same masks in the same order) is the value it hides.
    A mask that cannot be put back is refused: its text never runs."""
    meant: dict[str, Any] = {}
    for key, value in edited.items():
        if key in written and key in shown and value == shown[key]:
            meant[key] = written[key]
        else:
            meant[key] = _unmasked(value, written.get(key), shown.get(key), key)
    return meant


def _unmasked(value: Any, written: Any, shown: Any, where: str) -> Any:
    """``value`` with each mask it keeps replaced by the value it hid in ``written``."""
    if isinstance(value, dict):
        inner = (written, shown) if isinstance(written, dict) and isinstance(shown, dict) else ({}, {})
        return {k: _unmasked(v, inner[0].get(k), inner[1].get(k), f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        pairs: list[tuple[Any, Any]] = []
        if isinstance(written, list) and isinstance(shown, list) and len(written) == len(shown):
            pairs = list(zip(written, shown, strict=True))
        pairs += [(None, None)] * (len(value) - len(pairs))
        return [
            _unmasked(v, was, seen, f"{where}[{i}]")
            for i, (v, (was, seen)) in enumerate(zip(value, pairs, strict=False))
        ]
    if not isinstance(value, str) or not _MASK.search(value):
        return value
    kept = _MASK.findall(value)
    hidden = _hidden_in(written, shown)
    if hidden is None or [kind for _, kind in hidden] != kept:
        raise InvalidArgumentsError(
            f"the edited arguments keep a masked value ([REDACTED:{kept[0]}]) at {where} that stands "
            "for no value of the call there: write the value itself, or leave the masked text as shown"
        )
    pieces = _MASK.split(value)
    out = pieces[0]
    for (secret, _kind), literal in zip(hidden, pieces[2::2], strict=True):
        out += secret + literal
    return out


def _hidden_in(written: Any, shown: Any) -> list[tuple[str, str]] | None:
    """The values the masks of ``shown`` hide in ``written`` with their kinds, in order; None
    when ``shown`` is no masked form of ``written``."""
    if not isinstance(shown, str) or written is None:
        return None
    text = written if isinstance(written, str) else json.dumps(written)
    parts = _MASK.split(shown)
    matched = re.fullmatch("(.+?)".join(re.escape(literal) for literal in parts[::2]), text, re.S)
    if matched is None:
        return None
    return list(zip(matched.groups(), parts[1::2], strict=True))


def _parsed(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` as JSON text reads them back (what will be stored and run), refused when
    they are not a JSON object of text: a value JSON cannot hold, ``NaN``, a lone surrogate."""
    if not isinstance(arguments, Mapping):
        raise InvalidArgumentsError("the edited arguments must be a JSON object")
    if (where := lone_surrogate_at(dict(arguments))) is not None:
        raise InvalidArgumentsError(
            f"the edited arguments hold a lone surrogate{f' at {where}' if where else ''}, which is not text"
        )
    try:
        text = json.dumps(dict(arguments), ensure_ascii=False, allow_nan=False)
        return parse_arguments(text)
    except RecursionError:
        raise InvalidArgumentsError("the edited arguments are nested too deeply") from None
    except ArgumentError as exc:
        raise InvalidArgumentsError(f"the edited arguments: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentsError(f"the edited arguments are not JSON: {exc}") from None
