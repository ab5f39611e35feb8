"""How the CLI prints: one JSON document with ``--json``, readable rich text without."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentworld.models import Agent, Chat, Message, Usage, World
    from agentworld.models.pending import PendingApproval


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")


def fail(reason: str, *, code: int = 1) -> None:
    """A one-line reason on stderr and a non-zero exit (SPEC §3)."""
    line = " ".join(str(reason).split())
    sys.stderr.write(f"error: {line}\n")
    raise SystemExit(code)


def world_doc(world: World) -> dict[str, Any]:
    return world.model_dump(mode="json", by_alias=True)


def agent_doc(agent: Agent, usage: Usage | None = None) -> dict[str, Any]:
    doc = agent.model_dump(mode="json", by_alias=True)
    if usage is not None:
        doc["usage"] = {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens}
    return doc


def chat_doc(chat: Chat, usage: Usage | None = None) -> dict[str, Any]:
    doc = chat.model_dump(mode="json", by_alias=True)
    if usage is not None:
        doc["usage"] = {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens}
    return doc


def approval_doc(pending: PendingApproval) -> dict[str, Any]:
    """The approval document of SPEC §3."""
    return {
        "approvalId": pending.tool_call_id,
        "agent": pending.agent,
        "chatId": pending.chat_id,
        "toolName": pending.tool_name,
        "toolArgs": pending.tool_args,
        "message": pending.message,
        "createdAt": pending.created_at.isoformat(),
    }


def print_approvals(pending: Sequence[PendingApproval]) -> None:
    """Each request with, for shell_cmd, its full line, directory and the commands it runs."""
    from rich.markup import escape

    console = _console()
    for call in pending:
        console.print(
            f"[bold yellow]approval needed[/bold yellow] {escape(call.tool_call_id)}: "
            f"{escape(call.message)}"
        )
        shell = call.shell
        if shell is not None:
            console.print(f"  command line: {escape(shell.command_line)}")
            console.print(f"  directory:    {escape(shell.directory)}")
            for command in shell.commands:
                console.print(f"  runs:         {escape(command)}")
            if shell.note:
                console.print(f"  [bold red]{escape(shell.note)}[/bold red]")
        console.print(
            f"  [dim]agentworld approve WORLD {escape(call.tool_call_id)} "
            "--decision approve|deny [--scope once|session|always][/dim]"
        )


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    _console().print(table)


def print_fields(title: str, fields: dict[str, Any]) -> None:
    console = _console()
    console.print(f"[bold]{title}[/bold]")
    for key, value in fields.items():
        if value in (None, "", [], {}):
            continue
        console.print(f"  [dim]{key}:[/dim] {value}")


def print_messages(messages: Sequence[Message]) -> None:
    from rich.markup import escape

    console = _console()
    for message in messages:
        who = message.sender
        if message.role == "tool":
            console.print(f"[dim]  ↳ result {message.tool_call_id}: {escape(message.content or '')}[/dim]")
            continue
        if message.role == "system":
            console.print(f"[red]{escape(message.content or '')}[/red]")
            continue
        style = "cyan" if message.role == "assistant" else "green"
        if message.content:
            console.print(f"[bold {style}]{escape(who)}[/bold {style}]: {escape(message.content)}")
        for call in message.tool_calls or ():
            console.print(
                f"[yellow]  {escape(who)} calls {escape(call.function.name)}"
                f"({escape(call.function.arguments)})[/yellow]"
            )
