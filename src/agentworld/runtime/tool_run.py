"""Running one tool call with its log and its events — the one way a tool runs, whether the
policy allowed the call (``tool_calls``) or a person approved it (``approvals``).

The start is committed before the tool runs: the tool log's ``running`` row and the ``tool``
start event, in one transaction (a crash mid-run leaves the evidence that the call may have had
effects). How the run ended is handed back, not written: the step that stores the call's result
writes it, with the result's ``tool`` event, in its own transaction (``WorldRuntime.apply``),
so the log says a call finished exactly when its result exists.

What the log and the event keep of a result is redacted as the JSON document it is
(``redact_json_text``): redacting its text would miss every ``key=value`` after a string's
first line, where the newline is the two characters ``\\n``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agentworld.models.events import ToolEvent, ToolPhase
from agentworld.models.records import ToolLogEnd, ToolLogStatus
from agentworld.models.work import InboxChange
from agentworld.redaction import redact_json_text
from agentworld.runtime.turn_context import TurnContext
from agentworld.tools.executor import ToolResult
from agentworld.tools.registry import ToolContext

EVENT_CONTENT_CAP = 2000
"""How much of a result its ``tool`` event carries; the tool log and the transcript keep it all."""


@dataclass(frozen=True)
class Ran:
    """A tool's result, and how its run ended (written with the result)."""

    result: ToolResult
    end: ToolLogEnd


async def run_logged(
    ctx: TurnContext,
    context: ToolContext,
    call_id: str,
    tool_name: str,
    shown_arguments: Any,
    run: Callable[[], Awaitable[ToolResult]],
    *,
    inbox: InboxChange | None = None,
) -> Ran:
    """Commit the start (with ``inbox``, e.g. the work item marked started), publish it, run.
    ``shown_arguments``: the arguments as logged and shown, secrets redacted."""
    start = tool_event(context, call_id, tool_name, "start", {"arguments": shown_arguments})
    seq = await ctx.storage.tool_logs.start(
        world=context.world,
        chat_id=context.chat_id,
        agent=context.agent,
        tool_call_id=call_id,
        tool_name=tool_name,
        arguments=shown_arguments,
        inbox=inbox,
        events=(start,),
    )
    await ctx.bus.publish(start)
    began = time.perf_counter()
    result = await run()
    took = (time.perf_counter() - began) * 1000
    status: ToolLogStatus = "error" if result.is_error else "ok"
    return Ran(result, ToolLogEnd(seq, status, redact_json_text(result.content), took))


def result_event(
    context: ToolContext, call_id: str, tool_name: str, result: ToolResult, end: ToolLogEnd | None = None
) -> ToolEvent:
    """The ``tool`` event of a call's result (stored and published with the result message);
    a call refused before it ran says by whom. Redacted whole, then cut: a cut document is
    no longer JSON, and a cut could leave the first half of a secret. ``end``: how the run
    ended, whose output is that result redacted already (one redaction per call)."""
    redacted = end.output if end is not None and isinstance(end.output, str) else redact_json_text(result.content)
    detail: dict[str, Any] = {"content": redacted[:EVENT_CONTENT_CAP]}
    if result.denied_by is not None:
        detail["deniedBy"] = result.denied_by
    return tool_event(context, call_id, tool_name, "error" if result.is_error else "result", detail)


def tool_event(
    context: ToolContext, call_id: str, tool_name: str, phase: ToolPhase, detail: dict[str, Any]
) -> ToolEvent:
    return ToolEvent(
        world=context.world,
        phase=phase,
        chat_id=context.chat_id,
        agent=context.agent,
        tool_call_id=call_id,
        tool_name=tool_name,
        detail=detail,
    )


def ended(outcome: ToolResult | Ran, *, interrupted: bool = False) -> dict[str, str | int]:
    """How a tool call ended, as its span's attributes (``agentworld.tracing``): ``ok``,
    ``error``, ``denied`` or ``interrupted``, and a command's exit code."""
    result = outcome.result if isinstance(outcome, Ran) else outcome
    status = (
        "interrupted" if interrupted
        else "denied" if result.denied_by is not None
        else "error" if result.is_error
        else "ok"
    )
    attributes: dict[str, str | int] = {"agentworld.tool.status": status}
    if result.is_error:
        attributes["error.type"] = status if status != "error" else "tool_error"
    if isinstance(outcome, Ran) and '"exit_code"' in result.content:
        try:
            code = json.loads(result.content).get("exit_code")
        except (ValueError, AttributeError):
            code = None
        if isinstance(code, int):
            attributes["process.exit.code"] = code
    return attributes
