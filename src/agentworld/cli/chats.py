"""`agentworld chat ...`, `send` and `messages`: talking in a world."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentworld.cli import output
from agentworld.cli.common import JsonOpt, run, state

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld

app = typer.Typer(help="Start and list chats.", no_args_is_help=True)



@app.command("new")
def chat_new(world: str, json_out: JsonOpt = False) -> None:
    """Start a chat and make it the world's current chat; prints its id."""
    chat = run(lambda aw: aw.new_chat(world))
    if json_out:
        output.print_json({"chatId": chat.chat_id})
    else:
        typer.echo(chat.chat_id)


@app.command("list")
def chat_list(world: str, json_out: JsonOpt = False) -> None:
    """List a world's chats with their titles, sizes and token usage."""

    async def load(aw: AgentWorld) -> tuple[Any, Any]:
        return await aw.list_chats(world), await aw.storage.usage_by_chat(world)

    chats, usage = run(load)
    if json_out:
        output.print_json({"chats": [output.chat_doc(c, usage.get(c.chat_id)) for c in chats]})
        return
    output.print_table(
        f"Chats of {world}",
        ["chat id", "name", "messages", "created"],
        [(c.chat_id, c.name, c.message_count, c.created_at) for c in chats],
    )


def send(
    world: str,
    text: str,
    chat: Annotated[str | None, typer.Option("--chat", help="Chat id (default: the current chat).")] = None,
    sender: Annotated[str, typer.Option("--sender")] = "human",
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds to wait for the world to go idle; then print what it produced so far (the work goes on).")] = None,
    non_interactive: Annotated[
        bool, typer.Option("--non-interactive", help="Nobody will answer approvals: deny calls that need one.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Publish TEXT as a human message, run the world until idle, print what it produced."""
    if non_interactive:
        state["interactive"] = False

    async def go(aw: AgentWorld) -> Any:
        return await aw.send(world, text, chat_id=chat, sender=sender, timeout=timeout)

    result = run(go)
    if result.timed_out:  # printed as usual, then said: the work goes on, it is not abandoned
        result.errors.append(still_running(world, timeout))
    report_run(result, json_out)


def still_running(world: str, timeout: float | None) -> str:
    return (
        f"stopped waiting after {timeout:g} s; the chat's work is kept and continues "
        f"in the next process that runs world {world!r} (e.g. `agentworld resume {world}`)"
    )


def report_run(result: Any, json_out: bool) -> None:
    """Print what a command that ran the world produced; exit 1 with the last error, if any."""
    if json_out:
        output.print_json(
            {
                "chatId": result.chat_id,
                "messages": [m.to_json() for m in result.messages],
                "pendingApprovals": [output.approval_doc(p) for p in result.pending_approvals],
            }
        )
    else:
        output.print_messages(result.messages)
        output.print_approvals(result.pending_approvals)
    if result.errors:
        output.fail(result.errors[-1])


def messages(
    world: str,
    chat: Annotated[str | None, typer.Option("--chat", help="Chat id (default: the current chat).")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Show this agent's full memory instead.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Print a chat's transcript, or with --agent that agent's memory."""

    async def load(aw: AgentWorld) -> tuple[str | None, list[Any]]:
        settings = await aw.get_world(world)
        chat_id = chat or settings.current_chat_id
        if chat is not None:
            await aw.storage.get_chat(world, chat)
        if agent is not None:
            owner = await aw.get_agent(world, agent)
            return chat_id, await aw.storage.memory(world, owner.name, chat)
        if chat_id is None:
            return None, []
        return chat_id, await aw.storage.transcript(world, chat_id)

    chat_id, found = run(load)
    if json_out:
        output.print_json({"chatId": chat_id, "agent": agent, "messages": [m.to_json() for m in found]})
    else:
        output.print_messages(found)


