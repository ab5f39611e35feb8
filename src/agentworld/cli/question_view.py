"""Questions agents asked (``ask_user``, SPEC F3) as the human output of ``questions``,
``send``, ``approve`` and ``answer`` prints them: each with its id, its agent, its options
numbered, and the command that answers it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentworld.cli import output

if TYPE_CHECKING:
    from agentworld.models.pending import PendingQuestion


def print_questions(pending: Sequence[PendingQuestion], *, empty: str | None = None) -> None:
    """Each question, the text the agent asked in full (control characters escaped), and the
    ``agentworld answer`` command ready to paste, with the first option as its answer when
    only the options are taken."""
    from rich.console import Console

    escape = output.shown_text
    console = Console(highlight=False, soft_wrap=True)  # as ``output`` prints
    if not pending and empty is not None:
        console.print(empty, markup=False)
    for asked in pending:
        console.print(f"[bold cyan]question from {escape(asked.agent)}[/bold cyan]: {escape(asked.question)}")
        console.print(f"  question id:  {escape(asked.tool_call_id)}")
        console.print(f"  agent:        {escape(asked.agent)} (chat {escape(asked.chat_id)})")
        for number, option in enumerate(asked.options, start=1):
            label = "  options:    " if number == 1 else " " * 14
            console.print(f"{label}  {number}. {escape(option)}")
        if asked.options:
            taken = "any answer" if asked.allow_free_text else "one of the options, as written"
            console.print(f"  takes:        {taken}")
        example = asked.options[0] if asked.options and not asked.allow_free_text else "TEXT"
        answer = output.command("answer", asked.world, asked.tool_call_id, example)
        console.print(f"  answer:       {escape(answer)}")
