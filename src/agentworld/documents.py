"""The JSON documents of SPEC §3 and the Markdown export, shared by every interface.

The CLI prints these with ``--json`` and the HTTP API (``server/``) answers with them, so a
script can move from one to the other without a second parser: one function per document,
here, and no copy of it anywhere else. Pure functions of model objects (no I/O).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from agentworld import strict_json
from agentworld.approval.shell_view import escape_controls

if TYPE_CHECKING:
    from agentworld.approval.grants import Grant
    from agentworld.models import Agent, Chat, Message, Usage, World
    from agentworld.models.message import ToolCall
    from agentworld.models.pending import PendingApproval, PendingClientCall, PendingQuestion
    from agentworld.models.records import AuditEntry, ToolLogEntry, UsageGroup
    from agentworld.runtime.stopping import StopOutcome
    from agentworld.tools.registry import Tool

APPROVAL_CALL = "client.requestApproval"
"""The call the runtime injects to ask a person (``runtime.approvals.APPROVAL_TOOL``); it is
shown as an approval request, never as a tool the agent called."""


# -- values ------------------------------------------------------------------------------------


def timestamp(value: datetime | str | None) -> str | None:
    """The one JSON form of a point in time, ISO 8601 in UTC ending in ``Z`` — the form the
    models' own timestamps take (``2026-01-02T03:04:05.123456Z``) — whatever its source: a
    datetime, or an ISO string read back from storage."""
    if value is None:
        return None
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def when(value: datetime | str | None) -> str:
    """A point in time for people: ``2026-01-02 03:04:05 UTC``."""
    if value is None:
        return ""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def usage_doc(usage: Usage | None, spent: Iterable[UsageGroup] | None = None) -> dict[str, Any]:
    """Tokens used and, when the calls are given (``spent``), what they cost (``cost_doc``)."""
    doc: dict[str, Any] = {
        "inputTokens": usage.input_tokens if usage is not None else 0,
        "outputTokens": usage.output_tokens if usage is not None else 0,
    }
    if spent is not None:
        cost = cost_doc(spent)
        doc |= {"costUsd": cost["costUsd"], "unpricedCalls": cost["unpricedCalls"]}
    return doc


# -- documents ---------------------------------------------------------------------------------


def tool_args(arguments: str | dict[str, Any]) -> dict[str, Any]:
    """A call's arguments as the JSON documents give them: always an object, never the JSON
    text the model wrote (which is what a stored call holds). Text that is no JSON object —
    the runtime refuses such calls before they can wait for anyone, ``NaN`` included — is kept
    under ``_raw``, so nothing is hidden and the type stays the same."""
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = strict_json.loads(arguments)
    except ValueError:
        return {"_raw": arguments}
    return parsed if isinstance(parsed, dict) else {"_raw": arguments}


def tool_log_doc(entry: ToolLogEntry) -> dict[str, Any]:
    """A tool execution as ``tool-logs --json`` prints it (SPEC E4)."""
    return _fields(
        entry,
        "tool_call_id tool_name agent chat_id input output status started_at finished_at "
        "duration_ms runner seq",
    )


def world_doc(world: World) -> dict[str, Any]:
    """The world document, its ``mcpConfig`` secrets masked (:func:`shown_mcp_config`): the CLI
    prints it and the API answers with it, and both are read by more eyes than the settings."""
    doc = world.model_dump(mode="json", by_alias=True)
    if doc.get("mcpConfig"):
        doc["mcpConfig"] = shown_mcp_config(doc["mcpConfig"])
    return doc


def shown_mcp_config(config: dict[str, Any]) -> Any:
    """A world's MCP configuration as every interface shows it: secrets (``env`` values,
    headers, tokens in arguments, passwords in URLs) masked as in the logs."""
    # Imported here: its patterns are compiled at import, and most documents need none.
    from agentworld.redaction import redact

    return redact(config)


def shown_base_url(url: str) -> str:
    """An agent's endpoint as every interface shows it: a password in it masked, as in the
    logs (``http://user:[REDACTED:url_password]@host``)."""
    if "@" not in url:
        return url
    from agentworld.redaction import redact_text

    return redact_text(url)


def agent_doc(
    agent: Agent, usage: Usage | None = None, spent: Iterable[UsageGroup] | None = None
) -> dict[str, Any]:
    """The agent document, a password in its ``baseUrl`` masked (``http://user:pw@host``
    works, and is stored as given, but is shown like the logs show it)."""
    doc = agent.model_dump(mode="json", by_alias=True)
    if doc.get("baseUrl"):
        doc["baseUrl"] = shown_base_url(doc["baseUrl"])
    if usage is not None:
        doc["usage"] = usage_doc(usage, spent)
    return doc


def chat_doc(
    chat: Chat,
    usage: Usage | None = None,
    *,
    current: bool | None = None,
    spent: Iterable[UsageGroup] | None = None,
) -> dict[str, Any]:
    """A chat with its token usage and cost (zero for a chat nobody answered yet) and, when
    ``current`` is given, whether it is the world's current chat (as `chat list` marks it)."""
    doc = {**chat.model_dump(mode="json", by_alias=True), "usage": usage_doc(usage, spent)}
    if current is not None:
        doc["current"] = current
    return doc


def cost_doc(groups: Iterable[UsageGroup]) -> dict[str, Any]:
    """The calls of ``groups`` summed: ``costUsd`` adds up the calls whose cost is known (0 when
    there were no calls, null when none of them had a price), ``unpricedCalls`` counts those
    left out of it, so a partial sum never passes for the whole."""
    calls = input_tokens = output_tokens = unpriced = 0
    cost: float | None = None
    for group in groups:
        calls += group.calls
        input_tokens += group.input_tokens
        output_tokens += group.output_tokens
        unpriced += group.unpriced_calls
        if group.cost_usd is not None:
            cost = (cost or 0.0) + group.cost_usd
    if cost is None and calls == unpriced == 0:
        cost = 0.0
    return {
        "calls": calls,
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "costUsd": None if cost is None else round(cost, 10),
        "unpricedCalls": unpriced,
    }


def usage_report_doc(
    world: str, groups: Sequence[UsageGroup], *, chat_id: str | None, prices_as_of: str
) -> dict[str, Any]:
    """``agentworld usage`` and ``GET /api/worlds/{w}/usage``: the agents' model calls of the
    world (or of one chat) with their tokens and cost, in total and by agent, chat and model
    (SPEC O2). A model is null for calls stored before models were recorded."""

    def by(key: str, of: Any) -> list[dict[str, Any]]:
        keys = sorted({of(g) for g in groups}, key=lambda k: (k is None, k or ""))
        return [{key: k, **cost_doc(g for g in groups if of(g) == k)} for k in keys]

    return {
        "world": world,
        "chatId": chat_id,
        "pricesAsOf": prices_as_of,
        "total": cost_doc(groups),
        "byAgent": by("agent", lambda g: g.agent),
        "byChat": by("chatId", lambda g: g.chat_id),
        "byModel": by("model", lambda g: g.model),
    }


def approval_doc(pending: PendingApproval) -> dict[str, Any]:
    """The approval document of SPEC §3, with where the call runs (``sandbox``, SPEC C1) and,
    for a file tool, the change it makes (``diff``, SPEC F1; null for other tools)."""
    return {
        "approvalId": pending.tool_call_id,
        **_fields(pending, "agent chat_id tool_name tool_args message created_at"),
        "sandbox": pending.sandbox.to_json(),
        "diff": pending.diff,
    }


def question_doc(pending: PendingQuestion) -> dict[str, Any]:
    """A question an agent asked a person (``ask_user``, SPEC F3)."""
    return {
        "questionId": pending.tool_call_id,
        **_fields(pending, "agent chat_id question options allow_free_text created_at"),
    }


def pending_call_doc(call: PendingClientCall) -> dict[str, Any]:
    """A client-side tool call waiting for its result (SPEC T4)."""
    return {
        **_fields(call, "tool_call_id agent chat_id tool_name"),
        "toolArgs": tool_args(call.arguments),
        "createdAt": timestamp(call.created_at),
    }


def grant_doc(grant: Grant) -> dict[str, Any]:
    """A remembered session or always approval; ``redirectTargets``: the only files a shell
    line it covers may write, relative to the working directory (null: none)."""
    return {
        **_fields(grant, "grant_id scope tool_name agent chat_id"),
        "rootCommands": sorted(grant.roots) if grant.roots is not None else None,
        "redirectTargets": sorted(grant.redirect_targets) if grant.redirect_targets else None,
        **_fields(grant, "approval_id created_at"),
    }


def tool_doc(tool: Tool) -> dict[str, Any]:
    """A tool the world's agents are offered."""
    return {
        **_fields(tool, "name description location server"),
        "approval": {"required": tool.approval.required, "scope": tool.approval.scope},
        **_fields(tool, "annotations parameters"),
    }


class RunOutcome(Protocol):
    """What a command that ran the world produced (``agent_world.SendResult``)."""

    chat_id: str
    messages: list[Message]
    pending_approvals: list[PendingApproval]
    pending_questions: list[PendingQuestion]


def run_doc(result: RunOutcome) -> dict[str, Any]:
    """``send`` / ``approve`` / ``answer`` / ``respond`` output: ``{"chatId", "messages",
    "pendingApprovals", "pendingQuestions"}``."""
    return {
        "chatId": result.chat_id,
        "messages": [m.to_json() for m in result.messages],
        "pendingApprovals": [approval_doc(p) for p in result.pending_approvals],
        "pendingQuestions": [question_doc(p) for p in result.pending_questions],
    }


def stop_doc(outcome: StopOutcome | None) -> dict[str, Any]:
    """What Ctrl-C stopped in a command's run (SPEC K3), under ``"interrupted"`` in its run
    document: ``{"stopped", "droppedSteps", "interruptedCalls", "killedCalls", "callsNotRun"}``;
    ``stopped`` is false when nothing was stopped here (the chat had no work left, another
    process runs it, or the stop could not be recorded in time)."""
    if outcome is None or not outcome.stopped:
        return {"stopped": False, "droppedSteps": 0, "interruptedCalls": [], "killedCalls": [], "callsNotRun": []}
    return {
        "stopped": True,
        "droppedSteps": outcome.dropped,
        "interruptedCalls": list(outcome.interrupted),
        "killedCalls": list(outcome.killed),
        "callsNotRun": list(outcome.skipped),
    }


def audit_doc(entry: AuditEntry) -> dict[str, Any]:
    """An audit-log entry as ``audit --json`` prints it (SPEC A9)."""
    return _fields(
        entry,
        "at event actor approval_id agent chat_id tool_name tool_args decision scope latency_ms "
        "detail",
    )


def _fields(record: object, names: str) -> dict[str, Any]:
    """The attributes of ``record`` named in ``names`` (separated by spaces), in that order,
    each under its camelCase name and any point in time in the one ``timestamp`` form: the
    rule every document follows, so a key is derived from the field it shows, never spelled
    again by hand."""
    values = {name: getattr(record, name) for name in names.split()}
    return {
        _camel(name): timestamp(value) if isinstance(value, datetime) else value
        for name, value in values.items()
    }


def _camel(name: str) -> str:
    """``tool_call_id`` → ``toolCallId``, the spelling of the models' own aliases. Not pydantic's
    ``to_camel``: importing pydantic here would put it on ``talk``'s start-up path."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# -- approval requests and answers in words ----------------------------------------------------


def approval_request_text(arguments: str) -> str:
    """What an injected approval request asked, from its call's arguments."""
    try:
        request = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(request, dict):
        return arguments
    return str(request.get("message") or request.get("toolName") or arguments)


def approval_request_sandbox(arguments: str) -> str | None:
    """Where an injected approval request said the call would run (the sandbox line), from its
    call's arguments; None for a request that recorded none."""
    try:
        request = json.loads(arguments)
    except ValueError:
        return None
    shown = request.get("sandbox") if isinstance(request, dict) else None
    summary = shown.get("summary") if isinstance(shown, dict) else None
    return summary if isinstance(summary, str) else None


def approval_answer(call_id: str, content: str | None) -> str | None:
    """``approved once`` / ``denied`` / ``denied (timed out)`` when ``content`` is the answer to
    approval request ``call_id`` (with the arguments a person corrected the call to, SPEC F2);
    None for any other tool result."""
    if not call_id.startswith("approval_"):
        return None
    try:
        answer = json.loads(content or "")
    except ValueError:
        return None
    if not isinstance(answer, dict) or answer.get("decision") not in ("approve", "deny"):
        return None
    if answer["decision"] == "approve":
        scope = answer.get("scope") or "once"
        said = {"session": "approved for this session", "always": "approved always"}.get(
            scope, "approved once"
        )
        edited = answer.get("arguments")
        return f"{said}, as corrected to {json.dumps(edited)}" if isinstance(edited, dict) else said
    return "denied (timed out)" if answer.get("reason") == "timeout" else "denied"


# -- what a transcript shows ------------------------------------------------------------------


def refused_calls(messages: Iterable[Message]) -> frozenset[str]:
    """The ids of calls whose result is not an approval's answer: a ``client.requestApproval``
    among them was made by a model and refused by the runtime (SPEC A8), never a request."""
    return frozenset(
        m.tool_call_id
        for m in messages
        if m.role == "tool"
        and m.tool_call_id
        and approval_answer(m.tool_call_id, m.content) is None
    )


def is_approval_request(
    message: Message, call: ToolCall, *, refused: Iterable[str] = ()
) -> bool:
    """Whether ``call`` is an approval request the runtime made: the ``client.requestApproval``
    call it injects alone in a message of its own, with no text, and not refused. A model may
    name that tool too (with any id and any text); the runtime refuses such a call."""
    calls = message.tool_calls or ()
    return (
        call.function.name == APPROVAL_CALL
        and message.role == "assistant"
        and not message.content
        and len(calls) == 1
        and call.id not in refused
    )


# -- Markdown export ---------------------------------------------------------------------------


def markdown_transcript(chat: Chat, messages: Sequence[Message]) -> str:
    """A chat's transcript as a Markdown document: a heading per message with its sender and
    time; tool calls and results in fenced blocks; approval requests and answers in words.

    The document is read in terminals (``chat export`` prints it, ``cat`` shows the file), so
    its control characters — a title's or a message's ESC or BEL — are written as escapes, as
    the CLI shows them (``\\e[31m``); only newlines and tabs stay, and CRLF is a newline."""
    count = "1 message" if len(messages) == 1 else f"{len(messages)} messages"
    lines = [
        f"# {_one_line(chat.name)}",
        "",
        f"World `{chat.world}` · chat `{chat.chat_id}` · {count} · started {when(chat.created_at)}",
    ]
    refused = refused_calls(messages)
    for message in messages:
        lines += ["", f"## {message.sender} · {when(message.created_at)}", ""]
        lines += _markdown_body(message, refused)
    return escape_controls("\n".join(lines).replace("\r\n", "\n"), keep="\n\t") + "\n"


def _markdown_body(message: Message, refused: frozenset[str]) -> list[str]:
    if message.role == "tool":
        call_id = message.tool_call_id or ""
        answer = approval_answer(call_id, message.content)
        if answer is not None:
            return [f"Approval `{call_id}`: {answer}."]
        return [f"Result of `{call_id}`:", "", *_fenced(message.content or "")]
    body = [message.content] if message.content else []
    for call in message.tool_calls or ():
        if body:
            body.append("")
        if is_approval_request(message, call, refused=refused):
            asked = approval_request_text(call.function.arguments)
            body.append(f"Approval requested (`{call.id}`): {asked}")
        else:
            body += [f"Calls `{call.function.name}` (`{call.id}`):", ""]
            body += _fenced(_pretty_json(call.function.arguments), "json")
    return body or ["*(no content)*"]


def _fenced(content: str, language: str = "") -> list[str]:
    """A fenced code block whose fence is longer than any run of backticks inside."""
    longest = run = 0
    for char in content:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return [fence + language, content, fence]


def _pretty_json(arguments: str) -> str:
    try:
        return json.dumps(strict_json.loads(arguments), ensure_ascii=False, indent=2)
    except (ValueError, RecursionError):
        return arguments


def _one_line(value: str) -> str:
    return " ".join(value.split())
