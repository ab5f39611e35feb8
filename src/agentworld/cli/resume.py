"""``agentworld resume WORLD``: finish what stopped processes left in a world.

Every command that runs a world does this when it starts; this command does only that,
for a world nobody is about to send to (after a crash, a reboot, a killed terminal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agentworld.cli import output
from agentworld.cli.common import JsonOpt, WorldArg, parse_seconds, run, warn_if_uncontained

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld, ResumeResult


def resume(
    world: WorldArg,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            parser=parse_seconds,
            help="Seconds to wait for the work to finish; then print what it produced so far.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Finish the work a stopped process left in WORLD: unanswered messages, loops cut short,
    approved calls not yet run, approvals that timed out. Prints what that produced."""

    async def go(aw: AgentWorld) -> ResumeResult:
        await warn_if_uncontained(aw, world)
        return await aw.resume(world, timeout=timeout)

    result = run(go)
    if json_out:
        output.print_json(
            {
                "world": result.world,
                "chats": [output.run_doc(chat) for chat in result.chats],
            }
        )
    elif not result.chats:
        typer.echo(f"nothing to resume in world {world!r}")
    else:
        for chat in result.chats:
            typer.echo(f"chat {chat.chat_id}:")
            output.print_messages(chat.messages)
            output.print_approvals(chat.pending_approvals)
            if chat.pending_questions:
                from agentworld.cli.question_view import print_questions

                print_questions(chat.pending_questions)
    if result.timed_out:
        from agentworld.runtime.engine import TemporalSettings  # imports no temporalio

        output.fail(
            f"stopped waiting after {timeout:g} s; a worker goes on with the rest"
            if TemporalSettings.from_env() is not None
            else f"stopped waiting after {timeout:g} s; the rest continues in the next process "
            f"that runs world {world!r}"
        )


