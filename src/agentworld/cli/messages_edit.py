"""`agentworld message edit|delete`: take a chat back to an earlier point (SPEC K2).

An edit replaces a person's message and removes everything after it, then runs the world as
`send` does (same output); a delete removes a message and everything after it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentworld.cli import output
from agentworld.cli.chats import message_text, report_run, still_running
from agentworld.cli.common import JsonOpt, WorldArg, parse_seconds, run, warn_if_uncontained

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld
    from agentworld.cli.live import LiveView

app = typer.Typer(
    help="Edit a person's message, or delete a message, with everything after it.",
    no_args_is_help=True,
)

MessageId = Annotated[
    str, typer.Argument(metavar="MESSAGE_ID", help="A message id, as `messages --json` shows it.")
]
ChatOpt = Annotated[
    str | None, typer.Option("--chat", help="Chat id (default: the current chat).")
]


@app.command("edit")
def message_edit(
    world: WorldArg,
    message_id: MessageId,
    text: Annotated[
        str, typer.Argument(metavar="TEXT", help="The new text; - reads it from standard input.")
    ],
    chat: ChatOpt = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            parser=parse_seconds,
            help="Seconds to wait for the world to go idle; then print what it produced so far.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Replace a person's message by TEXT and run the world from there; prints what it produced.

    The message and everything after it in the chat are removed (transcript, agents'
    memories, waiting approvals and questions, queued work), TEXT is posted in its place from
    the same sender, and the world runs as for `send`. Refused while another process runs
    the chat, and for a message that is not a person's (delete that instead). What was
    removed stays in the audit log.
    """
    new_text = message_text(text, None)
    live = not json_out and sys.stdout.isatty()
    shown: list[LiveView] = []

    async def go(aw: AgentWorld) -> Any:
        await warn_if_uncontained(aw, world)
        chat_id = chat if chat is not None else await aw.current_chat(world)
        if not live:
            return await aw.edit_message(world, message_id, new_text, chat_id=chat_id, timeout=timeout)
        from agentworld.cli.live import live_view

        async with live_view(await aw.runtime(world), chat_id) as view:
            shown.append(view)
            return await aw.edit_message(world, message_id, new_text, chat_id=chat_id, timeout=timeout)

    result = run(go)
    if result.timed_out:
        result.errors.append(still_running(world, timeout, result.running))
    if shown:
        result.messages = shown[0].unshown(result.messages)
    report_run(result, json_out, empty=None if shown else "no new messages")


@app.command("delete")
def message_delete(
    world: WorldArg, message_id: MessageId, chat: ChatOpt = None, json_out: JsonOpt = False
) -> None:
    """Delete a message and everything after it in the chat; prints how many were removed.

    Removed are the transcript, the agents' memories, waiting approvals and questions, and
    queued work from that message on; a tool result goes with the call it answers. Refused
    while another process runs the chat; the audit log keeps what was removed.
    """

    async def go(aw: AgentWorld) -> tuple[str, int]:
        chat_id = chat if chat is not None else await aw.current_chat(world)
        return chat_id, await aw.delete_messages(world, message_id, chat_id=chat_id)

    chat_id, removed = run(go)
    if json_out:
        output.print_json({"chatId": chat_id, "removed": removed})
    else:
        output.say(f"removed {removed} message{'s' if removed != 1 else ''} from chat {chat_id}")
