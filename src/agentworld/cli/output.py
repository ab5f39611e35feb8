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
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from agentworld import strict_json
from agentworld.approval.shell_view import escape_controls
from agentworld.cli.state import state

# The documents are shared with the HTTP API; the CLI's modules reach them through here.
from agentworld.documents import APPROVAL_CALL as APPROVAL_CALL
from agentworld.documents import agent_doc as agent_doc
from agentworld.documents import approval_answer as approval_answer
from agentworld.documents import approval_doc as approval_doc
from agentworld.documents import approval_request_sandbox as approval_request_sandbox
from agentworld.documents import approval_request_text as approval_request_text
from agentworld.documents import chat_doc as chat_doc
from agentworld.documents import is_approval_request as is_approval_request
from agentworld.documents import markdown_transcript as markdown_transcript
from agentworld.documents import pending_call_doc as pending_call_doc
from agentworld.documents import refused_calls as refused_calls
from agentworld.documents import run_doc as run_doc
from agentworld.documents import timestamp as timestamp
from agentworld.documents import tool_args as tool_args
from agentworld.documents import tool_log_doc as tool_log_doc
from agentworld.documents import usage_doc as usage_doc
from agentworld.documents import when as when
from agentworld.documents import world_doc as world_doc

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from agentworld.models import Agent, Chat, Message, Usage
    from agentworld.models.pending import PendingApproval
    from agentworld.models.records import UsageGroup


def print_json(document: Any) -> None:
    """The document as exact JSON: ``json.loads`` gives back every value as it was stored.

    ``json.dumps`` escapes C0 controls but leaves DEL, the C1 controls (``\\x9b`` opens a
    terminal sequence too) and the bidi and zero-width characters raw. ``escape_controls``
    writes each of those as a ``\\uXXXX`` escape, which JSON reads back as the same
    character; the only raw control a dumped document holds is its own newlines, kept. The
    JSON is strict: a ``NaN`` an older version stored is printed as the string ``"NaN"``."""
    dumped = strict_json.dumps(document, ensure_ascii=False, indent=2)
    sys.stdout.write(escape_controls(dumped, keep="\n") + "\n")


def note(line: str) -> None:
    """Something the person should know that is not an error: one line on stderr (control
    characters shown as escapes, since the line may quote outside text)."""
    sys.stderr.write(f"note: {one_line(line)}\n")


def warn(line: str) -> None:
    """A warning on stderr (a tool server that cannot be reached): one line, its quoted text
    unable to drive the terminal."""
    sys.stderr.write(f"warning: {one_line(line)}\n")


def fail(reason: str, *, code: int = 1) -> NoReturn:
    """A one-line reason on stderr and a non-zero exit (SPEC §3). A reason often quotes what
    was given (a name, a path, a server's answer), so its control characters are escaped."""
    sys.stderr.write(f"error: {one_line(str(reason))}\n")
    raise SystemExit(code)


def one_line(text: str) -> str:
    """``text`` as one plain line: blanks folded, control characters shown as escapes."""
    return escape_controls(" ".join(text.split()))


# -- values: one form for each kind, in JSON and in text ------------------------------


def usage_text(doc: dict[str, Any]) -> str:
    """``99 in / 63 out``: the tokens a chat or an agent used, with their cost when the
    document has it (``99 in / 63 out, $0.0012``)."""
    tokens = f"{doc.get('inputTokens', 0)} in / {doc.get('outputTokens', 0)} out"
    if "costUsd" not in doc:
        return tokens
    from agentworld.cli.usage import cost_text

    return f"{tokens}, {cost_text(doc)}"


_TIMESTAMP_KEYS = frozenset(
    {"createdAt", "updatedAt", "lastActive", "at", "startedAt", "finishedAt"}
)


_USAGE_KEYS = ({"inputTokens", "outputTokens"}, {"inputTokens", "outputTokens", "costUsd", "unpricedCalls"})
"""The keys a usage document has at least, and at most (``documents.usage_doc``)."""


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
        case dict() if _USAGE_KEYS[0] <= set(value) <= _USAGE_KEYS[1]:
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
    db = state.get("db")
    words = ["agentworld"]
    if db and db != os.environ.get("AGENTWORLD_DB"):
        words += ["--db", db]
    return shlex.join([*words, *args])


# -- text ------------------------------------------------------------------------------


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def say(line: str) -> None:
    """One plain line of text output (no markup is read in it). Lines quote names and titles
    others chose, so control characters in it are shown as escapes (``shown_text``)."""
    _console().print(escape_controls(line), markup=False)


def print_approvals(
    pending: Sequence[PendingApproval],
    *,
    empty: str | None = None,
    answers: Literal["commands", "slash", "none"] = "commands",
) -> None:
    """Each request with its id on its own line and the commands that answer it, ready to
    paste; where the call runs (the sandbox line, SPEC C1); for shell_cmd, its full line,
    directory and the commands it runs; for a file tool, the diff of its change. ``answers``:
    the ``agentworld approve`` commands, the ``/approve`` commands of ``talk``, or none
    (``talk`` asks at its prompt right after)."""
    escape = shown_text
    console = _console()
    if not pending and empty is not None:
        console.print(empty, markup=False)
    for call in pending:
        console.print(f"[bold yellow]approval needed[/bold yellow]: {escape(call.message)}")
        console.print(f"  approval id:  {escape(call.tool_call_id)}")
        console.print(f"  agent:        {escape(call.agent)} (chat {escape(call.chat_id)})")
        where = escape(call.sandbox.summary)
        console.print(f"  sandbox:      {where}" if call.sandbox.active else f"  sandbox:      [bold red]{where}[/bold red]")
        shell = call.shell
        if shell is not None:
            console.print(f"  command line: {escape(shell.command_line)}")
            console.print(f"  directory:    {escape(shell.directory)}")
            for part in shell.commands:
                console.print(f"  runs:         {escape(part)}")
            if shell.note:
                console.print(f"  [bold red]{escape(shell.note)}[/bold red]")
        elif call.diff is not None:  # a file tool: the change it makes, in full (SPEC F1)
            from agentworld.cli.diff_view import print_diff

            console.print(f"  file:         {escape(text(call.tool_args.get('path')))}")
            console.print("  change:")
            print_diff(console, call.diff)
        else:
            console.print(f"  arguments:    {escape(_compact(call.tool_args))}")
        if answers == "commands":
            answer = command("approve", call.world, call.tool_call_id, "--decision")
            console.print(f"  approve:      {escape(answer)} approve")
            console.print(f"  deny:         {escape(answer)} deny")
        elif answers == "slash":
            console.print(
                f"  approve:      /approve {escape(call.tool_call_id)} once|session|always"
            )
            console.print(f"  deny:         /deny {escape(call.tool_call_id)}")
    if pending and answers == "commands":
        console.print(
            "  [dim](add --scope session or --scope always to the approve command to "
            "remember the answer)[/dim]"
        )


def print_chats(
    world: str,
    chats: Sequence[Chat],
    usage: dict[str, Usage],
    current: str | None,
    spent: Sequence[UsageGroup] | None = None,
) -> None:
    """A world's chats with their titles, sizes and token usage (``chat list``, ``/chats``),
    with their cost when the calls are given."""
    print_table(
        f"Chats of {world}",
        ["chat id", "name", "messages", "tokens", "created", "branch of", "current"],
        [
            (
                c.chat_id,
                c.name,
                c.message_count,
                usage_text(
                    usage_doc(
                        usage.get(c.chat_id),
                        None if spent is None else [g for g in spent if g.chat_id == c.chat_id],
                    )
                ),
                c.created_at,
                f"{c.branch_of.chat_id} at {c.branch_of.message_id}" if c.branch_of else "",
                "yes" if c.chat_id == current else "",
            )
            for c in chats
        ],
        empty=f"no chats yet in world {world!r}; start one with: {command('chat', 'new', world)}",
    )


def print_agents(world: str, agents: Sequence[Agent]) -> None:
    """A world's agents (``agent list``, ``/agents``)."""
    print_table(
        f"Agents of {world}",
        ["name", "provider", "model", "status", "LLM calls", "last active"],
        [(a.name, a.provider, a.model, a.status, a.llm_call_count, a.last_active) for a in agents],
    )


def print_rules(world: str, rules: Sequence[dict[str, Any]]) -> None:
    """The policy rules in force, highest priority first, as ``describe()`` gives them
    (``policy list``, ``/policy``)."""
    print_table(
        f"Policy of {world}",
        ["priority", "decision", "tool", "match", "rule", "source"],
        [
            (
                f"{d['priority']:.3f}",
                d["decision"],
                d["toolName"] or "*",
                _rule_match(d),
                d["name"] or "",
                d["source"] + (f" #{d['number']}" if d["number"] is not None else ""),
            )
            for d in rules
        ],
    )


def _rule_match(rule: dict[str, Any]) -> Any:
    """What a rule matches beyond the tool: its command, pattern and (file tools) paths."""
    paths = f"path in {', '.join(rule['pathPrefix'])}" if rule.get("pathPrefix") else ""
    criteria = rule["commandPrefix"] or rule["commandRegex"] or rule["argsPattern"] or ""
    return f"{criteria}; {paths}" if criteria and paths else criteria or paths


def print_table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, empty: str | None = None
) -> None:
    """A table when it fits the terminal with every word whole, else one record per row
    (the first column's value, then ``column: value`` lines), so no id or path is ever cut.
    With no rows, ``empty`` (default: the title and "none"). Cells hold outside text (chat
    titles, descriptions, tool names): each control character in them is shown as an escape,
    newlines and tabs included, so a row stays one row."""
    title = escape_controls(title)
    cells = [[escape_controls(text(value)) for value in row] for row in rows]
    console = _console()
    if not cells:
        console.print(escape_controls(empty or f"{title}: none"), markup=False)
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
    """``key: value`` lines under a title; empty values are left out. Values are shown as
    ``shown_text`` shows a message's body: a description or a system prompt keeps its
    newlines and tabs, and every other control character is written as an escape."""
    console = _console()
    console.print(f"[bold]{shown_text(title)}[/bold]")
    for key, value in fields.items():
        if value in (None, "", [], {}):
            continue
        console.print(f"  [dim]{shown_text(key)}:[/dim] {shown_text(text(value, key), lines=True)}")


def result_summary(content: str, *, limit: int = 60) -> str:
    """A tool result in a few words, on one line: a file's text, or a command's exit status
    and output; cut to ``limit`` characters."""
    try:
        result = json.loads(content)
    except ValueError:
        result = content
    if isinstance(result, dict) and "content" in result:
        summary = str(result["content"])
    elif isinstance(result, dict) and "exit_code" in result:
        summary = f"exit {result['exit_code']}: {result.get('stdout', '')}"
    elif isinstance(result, dict) and "error" in result:
        summary = f"error: {result['error']}"
    else:
        summary = content
    flat = " ".join(summary.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def shown_text(text: str, *, lines: bool = False) -> str:
    """Outside text (what a model, a person or a tool wrote) as rich markup that shows it and
    nothing else: markup escaped, and every control character that could move the cursor,
    retitle the terminal, hide or reorder text shown as an escape (``\\e[8m``, ``\\u202e``).
    ``lines``: a message's body, whose newlines and tabs are kept."""
    from rich.markup import escape

    return escape(escape_controls(text, keep="\n\t" if lines else ""))


def print_messages(
    messages: Sequence[Message], *, empty: str | None = "no messages yet"
) -> None:
    """A transcript as people read it (``message_lines``), or ``empty`` when there is none."""
    console = _console()
    if not messages and empty is not None:
        console.print(empty, markup=False)
    refused = refused_calls(messages)
    for message in messages:
        for line in message_lines(message, refused=refused):
            console.print(line)


def message_lines(
    message: Message, *, result_limit: int | None = None, refused: Iterable[str] = ()
) -> list[str]:
    """One message as rich-markup lines: who said what, the tools an agent called and what
    they returned (cut to ``result_limit`` characters, if given); an approval request (the
    injected ``client.requestApproval`` call, see ``is_approval_request``; ``refused``: the
    ids of calls the runtime refused) and its answer are shown as such. Outside text is
    shown through ``shown_text``, so it cannot drive the terminal."""
    who = shown_text(message.sender)
    if message.role == "tool":
        call_id = message.tool_call_id or ""
        answer = approval_answer(call_id, message.content)
        if answer is not None:
            return [f"[dim]  ↳ approval {shown_text(call_id)}: {shown_text(answer)}[/dim]"]
        content = " ".join((message.content or "").split()) if result_limit else message.content
        if result_limit and content and len(content) > result_limit:
            content = content[: result_limit - 1] + "…"
        return [
            f"[dim]  ↳ result of {shown_text(call_id)}: {shown_text(content or '', lines=True)}[/dim]"
        ]
    if message.role == "system":
        return [f"[red]{shown_text(message.content or '', lines=True)}[/red]"]
    style = "cyan" if message.role == "assistant" else "green"
    lines = []
    if message.content:
        lines.append(
            f"[bold {style}]{who}[/bold {style}]: {shown_text(message.content, lines=True)}"
        )
    for call in message.tool_calls or ():
        name, arguments = call.function.name, call.function.arguments
        if is_approval_request(message, call, refused=refused):
            asked = shown_text(approval_request_text(arguments))
            lines.append(
                f"[yellow]  approval requested: {asked} (approval id {shown_text(call.id)})[/yellow]"
            )
            if (where := approval_request_sandbox(arguments)) is not None:
                lines.append(f"[yellow]    sandbox: {shown_text(where)}[/yellow]")
        else:
            lines.append(
                f"[yellow]  {who} calls {shown_text(name)}({shown_text(arguments, lines=True)})[/yellow]"
            )
    return lines
