"""`agentworld chat ...`, `send` and `messages`: talking in a world."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentworld.cli import output
from agentworld.cli.common import (
    JsonOpt,
    WorldArg,
    check_sender,
    parse_seconds,
    run,
    state,
    stored_agent_name,
    warn_if_uncontained,
)

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld
    from agentworld.cli.live import LiveView

app = typer.Typer(
    help="Start, branch, list, switch, rename, delete and export chats.", no_args_is_help=True
)

ChatId = Annotated[str, typer.Argument(metavar="CHAT_ID", help="A chat id, as `chat list` shows it.")]


@app.command("new")
def chat_new(world: WorldArg, json_out: JsonOpt = False) -> None:
    """Start a chat and make it the world's current chat; prints its id."""
    chat = run(lambda aw: aw.new_chat(world))
    if json_out:
        output.print_json({"chatId": chat.chat_id})
    else:
        typer.echo(chat.chat_id)


@app.command("list")
def chat_list(world: WorldArg, json_out: JsonOpt = False) -> None:
    """List a world's chats with their titles, sizes and token usage."""

    async def load(aw: AgentWorld) -> tuple[Any, Any, str | None, Any]:
        settings = await aw.get_world(world)
        chats, usage = await aw.list_chats(world), await aw.chat_usage(world)
        return chats, usage, settings.current_chat_id, await aw.usage_groups(world)

    chats, usage, current, spent = run(load)
    if json_out:
        docs = [
            output.chat_doc(
                c,
                usage.get(c.chat_id),
                current=c.chat_id == current,
                spent=[g for g in spent if g.chat_id == c.chat_id],
            )
            for c in chats
        ]
        output.print_json({"chats": docs})
        return
    output.print_chats(world, chats, usage, current, spent)


@app.command("use")
def chat_use(world: WorldArg, chat_id: ChatId, json_out: JsonOpt = False) -> None:
    """Make a chat the world's current chat: `send` and `messages` go there by default."""
    chat = run(lambda aw: aw.use_chat(world, chat_id))
    if json_out:
        output.print_json({"chatId": chat.chat_id, "current": True})
    else:
        output.say(f"current chat of {world}: {chat.chat_id} ({chat.name})")


@app.command("rename")
def chat_rename(
    world: WorldArg,
    chat_id: ChatId,
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="The new name (it replaces the generated title).")
    ],
    json_out: JsonOpt = False,
) -> None:
    """Rename a chat."""
    chat = run(lambda aw: aw.rename_chat(world, chat_id, name))
    if json_out:
        output.print_json({"chatId": chat.chat_id, "name": chat.name})
    else:
        output.say(f"renamed {chat.chat_id} to {chat.name}")


@app.command("delete")
def chat_delete(world: WorldArg, chat_id: ChatId, json_out: JsonOpt = False) -> None:
    """Delete a chat with its messages, memories and waiting approvals (the audit log stays)."""
    run(lambda aw: aw.delete_chat(world, chat_id))
    if json_out:
        output.print_json({"deleted": chat_id})
    else:
        output.say(f"deleted chat {chat_id}")


@app.command("branch")
def chat_branch(
    world: WorldArg,
    message_id: Annotated[
        str, typer.Argument(metavar="MESSAGE_ID", help="The message to branch from (`messages --json` shows ids).")
    ],
    chat: Annotated[
        str | None, typer.Option("--chat", help="The chat of the message (default: the chat that holds it).")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Start a chat that goes on from a message: its transcript and every agent's memory are
    the chat's up to and including MESSAGE_ID. It becomes the current chat; prints its id."""
    branch = run(lambda aw: aw.branch_chat(world, message_id, chat_id=chat))
    if json_out:
        output.print_json({"chatId": branch.chat_id})
    else:
        typer.echo(branch.chat_id)


@app.command("export")
def chat_export(
    world: WorldArg,
    chat_id: ChatId,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the Markdown to this file instead of stdout.")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Print a chat's transcript as Markdown (or write it to --out)."""

    async def load(aw: AgentWorld) -> tuple[Any, Any]:
        return await aw.get_chat(world, chat_id), await aw.transcript(world, chat_id)

    chat, found = run(load)
    markdown = output.markdown_transcript(chat, found)
    if out is not None:
        try:
            out.write_text(markdown, encoding="utf-8")
        except OSError as exc:
            output.fail(f"cannot write {out}: {exc.strerror}")
    if json_out:
        output.print_json(
            {"chatId": chat.chat_id, "out": str(out) if out is not None else None, "markdown": markdown}
        )
    elif out is not None:
        output.say(f"wrote {len(found)} messages of {chat.chat_id} to {out}")
    else:
        sys.stdout.write(markdown)


def send(
    world: WorldArg,
    text: Annotated[
        str | None,
        typer.Argument(
            metavar="TEXT", help="The message; - reads it from standard input. Or give --file."
        ),
    ] = None,
    chat: Annotated[str | None, typer.Option("--chat", help="Chat id (default: the current chat).")] = None,
    sender: Annotated[str, typer.Option("--sender", help="Who the message is from (default: human).")] = "human",
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            parser=parse_seconds,
            help="Seconds to wait for the world to go idle; then print what it produced so far (the work goes on).",
        ),
    ] = None,
    approve: Annotated[
        str,
        typer.Option(
            "--approve",
            help="ask | deny: calls that need a person wait, listed with the commands that answer "
            "them (ask), or are refused and the exit status is 3 (deny: nobody is there to ask).",
        ),
    ] = "ask",
    non_interactive: Annotated[
        bool, typer.Option("--non-interactive", help="The same as --approve deny.")
    ] = False,
    file: Annotated[
        Path | None, typer.Option("--file", help="Read the message from this file (UTF-8).")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Publish TEXT as a human message, run the world until idle, print what it produced.

    TEXT `-` reads the message from standard input; --file PATH reads it from a file. On a
    terminal the answers show as they stream; otherwise (and with --json) at the end. Exit
    status: 0, 1 on an error, 2 on bad usage, 3 when --approve deny refused a call.
    """
    if approve not in ("ask", "deny"):
        output.fail("--approve must be ask or deny", code=2)
    text = message_text(text, file)
    denying = approve == "deny" or non_interactive
    if denying:
        state["interactive"] = False
    live = not json_out and sys.stdout.isatty()
    shown: list[LiveView] = []

    async def go(aw: AgentWorld) -> Any:
        await check_sender(aw, world, sender)
        await warn_if_uncontained(aw, world)
        chat_id = chat if chat is not None else await aw.current_chat(world)
        if not live:
            return await aw.send(world, text, chat_id=chat_id, sender=sender, timeout=timeout)
        from agentworld.cli.live import live_view

        async with live_view(await aw.runtime(world), chat_id) as view:
            shown.append(view)
            return await aw.send(world, text, chat_id=chat_id, sender=sender, timeout=timeout)

    result = run(go)
    if result.timed_out:  # printed as usual, then said: the work goes on, it is not abandoned
        result.errors.append(still_running(world, timeout, result.running))
    if shown:  # what showed live is not printed again
        result.messages = shown[0].unshown(result.messages)
    report_run(result, json_out, empty=None if shown else "no new messages")
    if denying and result.denied:
        output.fail(denied_summary(result.denied), code=DENIED_EXIT)


DENIED_EXIT = 3
"""``send --approve deny``: the run refused a call (a script learns its work is incomplete)."""


def denied_summary(denied: list[Any]) -> str:
    """One line: how many calls were refused, which, and why the first one was."""
    tools = ", ".join(sorted({f"{d.agent} → {d.tool_name}" for d in denied}))
    return f"{len(denied)} tool call{'s' if len(denied) != 1 else ''} refused ({tools}): {denied[0].reason}"


def still_running(world: str, timeout: float | None, running: Sequence[str] = ()) -> str:
    """Why a command stopped waiting, with the command that takes the work up (on this
    command's database, so it can be pasted as it is), and the tools this process stops as it
    exits: they are recorded as interrupted and not run again (they may have had effects).
    On Temporal a worker runs the turn and goes on with it: there is nothing to take up."""
    from agentworld.runtime.engine import TemporalSettings  # imports no temporalio

    if TemporalSettings.from_env() is not None:
        return f"stopped waiting after {timeout:g} s; a worker goes on with the chat's work"
    line = (
        f"stopped waiting after {timeout:g} s; the chat's work is kept and continues "
        f"in the next process that runs world {world!r} (e.g. `{output.command('resume', world)}`)"
    )
    if running:
        names = ", ".join(dict.fromkeys(running))
        line += (
            f"; {len(running)} tool call{'s' if len(running) != 1 else ''} still running ({names})"
            " stop with this process, recorded as interrupted and not run again"
        )
    return line


def message_text(text: str | None, file: Path | None) -> str:
    """The message to send: TEXT, standard input for ``-``, or the --file; an empty one is
    refused (it would reach nobody and say nothing)."""
    if text is not None and file is not None:
        output.fail("give the message as TEXT or with --file, not both", code=2)
    if file is not None:
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            output.fail(f"cannot read message file {file}: {exc.strerror}")
        except UnicodeDecodeError:
            output.fail(f"message file {file} is not UTF-8 text")
    elif text == "-":
        if sys.stdin is None:  # started with ``<&-``
            output.fail("standard input is closed: there is no message to read for -", code=2)
        try:
            text = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError:
            output.fail("standard input is not UTF-8 text")
    elif text is None:
        output.fail("missing the message: give TEXT, - to read standard input, or --file PATH", code=2)
    # A trailing newline comes from the file or the pipe (echo, a heredoc), not from the writer;
    # a leading byte-order mark from the editor that saved it (Windows' do), and it would keep
    # a leading @mention from addressing anyone.
    text = text.removeprefix("\ufeff").rstrip("\r\n")
    if not text.strip():
        output.fail("the message is empty", code=2)
    return text


def report_run(result: Any, json_out: bool, *, empty: str | None = "no new messages") -> None:
    """Print what a command that ran the world produced; exit 1 with the last error, if any,
    or 130 when Ctrl-C stopped the run (with what the stop did)."""
    interrupted = getattr(result, "interrupted", False)
    if json_out:
        doc = output.run_doc(result)
        if interrupted:
            from agentworld.documents import stop_doc

            doc["interrupted"] = stop_doc(result.stop)
        output.print_json(doc)
    else:
        output.print_messages(result.messages, empty=empty)
        output.print_approvals(result.pending_approvals)
        if result.pending_questions:
            from agentworld.cli.question_view import print_questions

            print_questions(result.pending_questions)
    for notice in getattr(result, "notices", ()):
        output.note(notice)
    if interrupted:
        from agentworld.cli.interrupts import INTERRUPTED_EXIT

        output.fail(interrupted_line(result.stop, result.errors), code=INTERRUPTED_EXIT)
    if result.errors:
        output.fail(result.errors[-1])


def interrupted_line(stop: Any, errors: Sequence[str]) -> str:
    """What Ctrl-C did to a command's run, in one line (``runtime.stopping.StopOutcome``)."""
    if stop is None:
        return f"interrupted; {errors[-1]}" if errors else "interrupted"
    if not stop.stopped:
        return "interrupted; nothing was left to stop here (a chat another process runs is stopped there)"
    killed, cancelled = len(stop.killed), len(stop.interrupted) - len(stop.killed)
    done = [f"{killed} running command{'s' if killed != 1 else ''} killed"] if killed else []
    done += [f"{cancelled} running tool call{'s' if cancelled != 1 else ''} cancelled"] if cancelled else []
    done += [f"{len(stop.skipped)} call{'s' if len(stop.skipped) != 1 else ''} not run"] if stop.skipped else []
    done += [f"{stop.dropped} queued step{'s' if stop.dropped != 1 else ''} dropped"] if stop.dropped else []
    return "interrupted: the chat's turn was stopped" + (f" ({', '.join(done)})" if done else "")


def messages(
    world: WorldArg,
    chat: Annotated[str | None, typer.Option("--chat", help="Chat id (default: the current chat).")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Show this agent's full memory instead.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Print a chat's transcript, or with --agent that agent's memory."""

    async def load(aw: AgentWorld) -> tuple[str | None, str | None, list[Any], list[str]]:
        """The chat, the agent as it was spelled when created, the messages, and (when there
        are none) the world's agents for the hint."""
        settings = await aw.get_world(world)
        chat_id = chat if chat is not None else settings.current_chat_id
        if agent is not None:
            memory = await aw.agent_memory(world, agent, chat_id=chat)
            return chat_id, await stored_agent_name(aw, world, agent), memory, []
        found = await aw.transcript(world, chat_id) if chat_id is not None else []
        names = [] if found else [a.name for a in await aw.list_agents(world)]
        return chat_id, None, found, names

    chat_id, owner, found, agent_names = run(load)
    if json_out:
        output.print_json({"chatId": chat_id, "agent": owner, "messages": [m.to_json() for m in found]})
    elif found:
        output.print_messages(found)
    elif owner is not None:
        output.say(f"no messages yet in the memory of {owner}")
    else:
        output.say(f"no messages yet; {_first_step(world, agent_names)}")


def _first_step(world: str, agents: list[str]) -> str:
    """What to type to get a world talking: a message to its first agent, or an agent."""
    if agents:
        return f"start with: {output.command('send', world, f'@{agents[0]} hello')}"
    create = output.command(
        "agent", "create", world, "helper", "--provider", "scripted", "--model", "echo"
    )
    return f"the world has no agents; create one with: {create}"
