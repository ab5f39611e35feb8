"""The change a file tool's call makes, as its approval shows it, and the check when it runs
(SPEC F1).

A tool that changes a file says how (``Tool.preview``: the unified diff and the file as it is
now), so the approval flow needs no tool's name. What the person is shown has this process's
secret values and every known secret shape masked, as the call's arguments are; the file it
was made from (``ShownFile``) goes with the request, and the approved call runs with it
(``ToolContext.shown_file``): the tool writes only if the file is still exactly that.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agentworld.models.pending import PendingApproval, ShownFile
from agentworld.process_secrets import redact_process_text
from agentworld.tools.registry import Tool, ToolContext

UNSHOWABLE = "unavailable"
"""The digest recorded when a change could not be shown: no file has it, so the approved call
finds the file changed and writes nothing."""


@dataclass(frozen=True, slots=True)
class ShownChange:
    """What an approval request shows of a file tool's call: the diff (masked) and the file."""

    diff: str
    file: ShownFile


async def shown_change(tool: Tool, arguments: dict[str, object], context: ToolContext) -> ShownChange | None:
    """The change ``tool``'s call would make, as the person approving it sees it; None for a
    tool that shows none. A change that can no longer be made (the file changed since the
    call's precheck) is shown as that, and its approval can write nothing."""
    if tool.preview is None:
        return None
    try:
        preview = tool.preview(dict(arguments), context)
    except Exception as exc:  # the precheck passed a moment ago: the file changed since
        reason = redact_process_text(str(exc) or type(exc).__name__)
        return ShownChange(
            f"(the change cannot be shown: {reason}; approving it writes nothing)\n",
            ShownFile(path="", sha256=UNSHOWABLE),
        )
    return ShownChange(redact_process_text(preview.diff), preview.file)


def with_shown_file(context: ToolContext, call: PendingApproval) -> ToolContext:
    """The context an approved call runs in: with the file its approval showed, if any."""
    return context if call.file is None else replace(context, shown_file=call.file)
