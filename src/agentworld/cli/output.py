"""How the CLI prints: one JSON document with ``--json``, readable rich text without.

Text output never cuts an id or a path, whatever the terminal's width: a table that would
have to cut a word is printed as one record per row instead, and long lines are left for the
terminal to wrap (rich's soft wrap), so the next command can always be copied whole.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from agentworld.models import Agent, Chat, Message, Usage, World
    from agentworld.models.pending import PendingApproval

APPROVAL_CALL = "client.requestApproval"
"""The call the runtime injects to ask a person (``runtime.approvals.APPROVAL_TOOL``); it is
shown as an approval request, never as a tool the agent called."""

def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")


def note(line: str) -> None:
    """Something the person should know that is not an error: one line on stderr."""
    sys.stderr.write(f"note: {' '.join(line.split())}\n")


def fail(reason: str, *, code: int = 1) -> NoReturn:
    """A one-line reason on stderr and a non-zero exit (SPEC §3)."""
    line = " ".join(str(reason).split())
    sys.stderr.write(f"error: {line}\n")
    raise SystemExit(code)


# -- values: one form for each kind, in JSON and in text ------------------------------


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


def usage_doc(usage: Usage | None) -> dict[str, int]:
    return {
        "inputTokens": usage.input_tokens if usage is not None else 0,
        "outputTokens": usage.output_tokens if usage is not None else 0,
    }


def usage_text(doc: dict[str, Any]) -> str:
    """``99 in / 63 out``: the tokens a chat or an agent used."""
    return f"{doc.get('inputTokens', 0)} in / {doc.get('outputTokens', 0)} out"


_TIMESTAMP_KEYS = frozenset({"createdAt", "updatedAt", "lastActive", "at", "startedAt", "finishedAt"})


def text(value: Any, key: str = "") -> str:
    """A value as text output shows it: never a Python repr (lists are comma lists, token
    usage is ``N in / M out``, times are UTC, other objects compact JSON)."""
    match value:
        case None:
            return ""
        case bool():
            return "yes" if value else "no"
        case datetime():
            return when(value)
        case str() if key in _TIMESTAMP_KEYS:
            try:
                return when(value)
            except ValueError:
                return value
        case dict() if set(value) == {"inputTokens", "outputTokens"}:
            return usage_text(value)
        case list() | tuple() | set() | frozenset():
            items = sorted(value) if isinstance(value, set | frozenset) else value
            return ", ".join(_compact(item) for item in items)
        case dict():
            return _compact(value)
        case _:
            return str(value)


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def command(*args: str) -> str:
    """A command line ready to paste: ``agentworld`` with this process's ``--db`` when it is
    not what a new command would use anyway (the default, or ``$AGENTWORLD_DB``)."""
    # Imported here: common imports this module to report errors.
    from agentworld.cli.common import state

    db = state.get("db")
    words = ["agentworld"]
    if db and db != os.environ.get("AGENTWORLD_DB"):
        words += ["--db", db]
    return shlex.join([*words, *args])


# -- JSON documents (SPEC §3) ----------------------------------------------------------


def world_doc(world: World) -> dict[str, Any]:
    return world.model_dump(mode="json", by_alias=True)


def agent_doc(agent: Agent, usage: Usage | None = None) -> dict[str, Any]:
    doc = agent.model_dump(mode="json", by_alias=True)
    if usage is not None:
        doc["usage"] = usage_doc(usage)
    return doc


def chat_doc(chat: Chat, usage: Usage | None = None) -> dict[str, Any]:
    """A chat with its token usage (zero for a chat nobody answered yet)."""
    return {**chat.model_dump(mode="json", by_alias=True), "usage": usage_doc(usage)}


def approval_doc(pending: PendingApproval) -> dict[str, Any]:
    """The approval document of SPEC §3."""
    return {
        "approvalId": pending.tool_call_id,
        "agent": pending.agent,
        "chatId": pending.chat_id,
        "toolName": pending.tool_name,
        "toolArgs": pending.tool_args,
        "message": pending.message,
        "createdAt": timestamp(pending.created_at),
    }


# -- text ------------------------------------------------------------------------------


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def say(line: str) -> None:
    """One plain line of text output (no markup is read in it)."""
    _console().print(line, markup=False)


def print_approvals(pending: Sequence[PendingApproval], *, empty: str | None = None) -> None:
    """Each request with its id on its own line and the commands that answer it, ready to
    paste; for shell_cmd, its full line, directory and the commands it runs."""
    from rich.markup import escape

    console = _console()
    if not pending and empty is not None:
        console.print(empty, markup=False)
    for call in pending:
        console.print(f"[bold yellow]approval needed[/bold yellow]: {escape(call.message)}")
        console.print(f"  approval id:  {escape(call.tool_call_id)}")
        console.print(f"  agent:        {escape(call.agent)} (chat {escape(call.chat_id)})")
        shell = call.shell
        if shell is not None:
            console.print(f"  command line: {escape(shell.command_line)}")
            console.print(f"  directory:    {escape(shell.directory)}")
            for part in shell.commands:
                console.print(f"  runs:         {escape(part)}")
            if shell.note:
                console.print(f"  [bold red]{escape(shell.note)}[/bold red]")
        else:
            console.print(f"  arguments:    {escape(_compact(call.tool_args))}")
        answer = command("approve", call.world, call.tool_call_id, "--decision")
        console.print(f"  approve:      {escape(answer)} approve")
        console.print(f"  deny:         {escape(answer)} deny")
    if pending:
        console.print(
            "  [dim](add --scope session or --scope always to the approve command to "
            "remember the answer)[/dim]"
        )


def print_table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, empty: str | None = None
) -> None:
    """A table when it fits the terminal with every word whole, else one record per row
    (the first column's value, then ``column: value`` lines), so no id or path is ever cut.
    With no rows, ``empty`` (default: the title and "none")."""
    cells = [[text(value) for value in row] for row in rows]
    console = _console()
    if not cells:
        console.print(empty or f"{title}: none", markup=False)
        return
    rendered = _render(console, _table(title, columns, cells))
    if all(word in rendered for row in cells for value in row for word in value.split()):
        sys.stdout.write("".join(line.rstrip() + "\n" for line in rendered.splitlines()))
        return
    console.print(title, markup=False, style="bold")
    for row in cells:
        console.print(row[0] or "-", markup=False, style="bold")
        for column, value in zip(columns[1:], row[1:], strict=True):
            if value:
                console.print(f"  {column}: {value}", markup=False)


def _table(title: str, columns: Sequence[str], cells: list[list[str]]) -> Table:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title=Text(title, style="bold"),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for column in columns:
        table.add_column(column)
    for row in cells:
        table.add_row(*(Text(value) for value in row))
    return table


def _render(console: Console, table: Table) -> str:
    """The table as the console would print it (so whether every word is whole can be seen)."""
    with console.capture() as captured:
        console.print(table)
    return captured.get()


def print_fields(title: str, fields: dict[str, Any]) -> None:
    """``key: value`` lines under a title; empty values are left out."""
    from rich.markup import escape

    console = _console()
    console.print(f"[bold]{escape(title)}[/bold]")
    for key, value in fields.items():
        if value in (None, "", [], {}):
            continue
        console.print(f"  [dim]{escape(key)}:[/dim] {escape(text(value, key))}")


def print_messages(messages: Sequence[Message], *, empty: str | None = "no messages yet") -> None:
    """A transcript as people read it (``message_lines``), or ``empty`` when there is none."""
    console = _console()
    if not messages and empty is not None:
        console.print(empty, markup=False)
    for message in messages:
        for line in message_lines(message):
            console.print(line)


def message_lines(message: Message, *, result_limit: int | None = None) -> list[str]:
    """One message as rich-markup lines: who said what, the tools an agent called and what
    they returned (cut to ``result_limit`` characters, if given); an approval request (the
    injected ``client.requestApproval`` call) and its answer are shown as such."""
    from rich.markup import escape

    who = escape(message.sender)
    if message.role == "tool":
        call_id = message.tool_call_id or ""
        answer = approval_answer(call_id, message.content)
        if answer is not None:
            return [f"[dim]  ↳ approval {escape(call_id)}: {escape(answer)}[/dim]"]
        content = " ".join((message.content or "").split()) if result_limit else message.content
        if result_limit and content and len(content) > result_limit:
            content = content[: result_limit - 1] + "…"
        return [f"[dim]  ↳ result of {escape(call_id)}: {escape(content or '')}[/dim]"]
    if message.role == "system":
        return [f"[red]{escape(message.content or '')}[/red]"]
    style = "cyan" if message.role == "assistant" else "green"
    lines = []
    if message.content:
        lines.append(f"[bold {style}]{who}[/bold {style}]: {escape(message.content)}")
    for call in message.tool_calls or ():
        name, arguments = call.function.name, call.function.arguments
        if name == APPROVAL_CALL:
            asked = escape(approval_request_text(arguments))
            lines.append(f"[yellow]  approval requested: {asked} (approval id {escape(call.id)})[/yellow]")
        else:
            lines.append(f"[yellow]  {who} calls {escape(name)}({escape(arguments)})[/yellow]")
    return lines


def approval_request_text(arguments: str) -> str:
    """What an injected approval request asked, from its call's arguments."""
    try:
        request = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(request, dict):
        return arguments
    return str(request.get("message") or request.get("toolName") or arguments)


def approval_answer(call_id: str, content: str | None) -> str | None:
    """``approved once`` / ``denied`` / ``denied (timed out)`` when ``content`` is the answer to
    approval request ``call_id``; None for any other tool result."""
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
        return {"session": "approved for this session", "always": "approved always"}.get(
            scope, "approved once"
        )
    return "denied (timed out)" if answer.get("reason") == "timeout" else "denied"


# -- Markdown export -------------------------------------------------------------------


def markdown_transcript(chat: Chat, messages: Sequence[Message]) -> str:
    """A chat's transcript as a Markdown document: a heading per message with its sender and
    time; tool calls and results in fenced blocks; approval requests and answers in words."""
    count = "1 message" if len(messages) == 1 else f"{len(messages)} messages"
    lines = [
        f"# {_one_line(chat.name)}",
        "",
        f"World `{chat.world}` · chat `{chat.chat_id}` · {count} · started {when(chat.created_at)}",
    ]
    for message in messages:
        lines += ["", f"## {message.sender} · {when(message.created_at)}", ""]
        lines += _markdown_body(message)
    return "\n".join(lines) + "\n"


def _markdown_body(message: Message) -> list[str]:
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
        if call.function.name == APPROVAL_CALL:
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
        return json.dumps(json.loads(arguments), ensure_ascii=False, indent=2)
    except ValueError:
        return arguments


def _one_line(value: str) -> str:
    return " ".join(value.split())
