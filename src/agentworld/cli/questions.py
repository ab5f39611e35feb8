"""Question commands: `questions` (what agents asked) and `answer` (SPEC F3)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentworld.cli import output
from agentworld.cli.chats import report_run, still_running
from agentworld.cli.common import JsonOpt, WorldArg, check_chat, parse_seconds, run
from agentworld.cli.question_view import print_questions
from agentworld.documents import question_doc

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld
    from agentworld.models.pending import PendingQuestion


def questions(
    world: WorldArg,
    chat: Annotated[str | None, typer.Option("--chat", help="Only this chat.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the questions agents asked that wait for an answer."""

    async def load(aw: AgentWorld) -> list[PendingQuestion]:
        await check_chat(aw, world, chat)
        return await aw.questions(world, chat_id=chat)

    pending = run(load)
    if json_out:
        output.print_json({"questions": [question_doc(q) for q in pending]})
        return
    print_questions(pending, empty="no questions waiting")


def answer(
    world: WorldArg,
    question_id: Annotated[
        str, typer.Argument(metavar="QUESTION_ID", help="The question's id, as `questions` shows it.")
    ],
    text: Annotated[
        str,
        typer.Argument(
            metavar="TEXT",
            help="The answer (one of the options, as written, when only they are taken); - reads standard input.",
        ),
    ],
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", parser=parse_seconds, help="Seconds to wait for the world to go idle."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Answer a question an agent asked; the agent goes on; prints the messages produced."""
    given = _answer_text(text)

    async def go(aw: AgentWorld) -> Any:
        return await aw.answer(world, question_id, given, timeout=timeout)

    result = run(go)
    if result.timed_out:
        result.errors.append(still_running(world, timeout, result.running))
    report_run(result, json_out)


def _answer_text(text: str) -> str:
    """TEXT, or standard input for ``-`` (its trailing newline and a leading byte-order mark
    dropped: they come from the pipe or the editor, not from the person answering)."""
    if text != "-":
        return text
    if sys.stdin is None:  # started with ``<&-``
        output.fail("standard input is closed: there is no answer to read for -", code=2)
    try:
        read = sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError:
        output.fail("standard input is not UTF-8 text")
    return read.removeprefix("\ufeff").rstrip("\r\n")
