"""The slash commands of ``agentworld talk``.

Each goes through the ``AgentWorld`` facade and prints with the same functions as the
matching ``agentworld`` command (``output.print_chats``, ``print_approvals``,
``markdown_transcript`` …), so a chat list or an export looks the same in both. Those that go
back in a chat (``/branch``, ``/edit``, ``/undo``) and the numbered ``/messages`` they read
their numbers from are ``talk_control``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from agentworld.cli import output, talk_control
from agentworld.cli.talk_control import COMMANDS as CONTROL_COMMANDS

if TYPE_CHECKING:
    from agentworld.cli.talk_prompt import Answer
    from agentworld.cli.talk_session import TalkSession

COMMANDS: dict[str, str] = {
    "/new": "start a new chat (it becomes the world's current chat)",
    "/chats": "list the world's chats",
    "/switch CHAT_ID": "talk in another chat of the world",
    "/rename NAME": "rename this chat",
    "/agents": "list the world's agents",
    "/agent NAME": "show one agent",
    "/messages [N]": "the last N messages of this chat (default 20), numbered",
    **CONTROL_COMMANDS,
    "/approvals": "the approval requests waiting in this world",
    "/approve ID once|session|always": "approve a request",
    "/deny ID": "deny a request",
    "/questions": "the agents' questions waiting in this world",
    "/answer ID TEXT": "answer an agent's question (an option's number or text, or your words)",
    "/policy": "the policy rules in force",
    "/export [FILE]": "write this chat as Markdown (default: CHAT_ID.md)",
    "/show N": "tool result N in full",
    "/stop": "stop this chat's work (as Ctrl-C does during a turn)",
    "/help": "this list",
    "/quit": "leave (Ctrl-D does too)",
}
"""Each command as it is typed, and what it does (for /help and completion)."""

Handler = Callable[["TalkSession", list[str]], Awaitable[None]]
_HANDLERS: dict[str, Handler] = {}


class Quit(Exception):
    """``/quit``: leave the session."""


def _command(name: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        _HANDLERS[name] = handler
        return handler

    return register


async def run_command(session: TalkSession, line: str) -> None:
    """Do one slash command; an unknown one is said so, with the list."""
    name, *args = line.split()
    handler = _HANDLERS.get(name)
    if handler is None:
        session.screen.error(f"unknown command {name}; /help lists them")
        return
    await handler(session, args)


def _usage(session: TalkSession, name: str) -> None:
    usage = next(u for u in COMMANDS if u.split()[0] == name)
    session.screen.error(f"usage: {usage}")


@_command("/help")
async def _help(session: TalkSession, args: list[str]) -> None:
    width = max(len(usage) for usage in COMMANDS)
    for usage, meaning in COMMANDS.items():
        session.screen.line(f"  [bold]{escape(usage.ljust(width))}[/bold]  {escape(meaning)}")
    session.screen.note("  @name addresses an agent (Tab completes); Esc-Enter starts a new line; "
                        "Ctrl-C stops a turn; Ctrl-D leaves")  # fmt: skip


@_command("/quit")
async def _quit(session: TalkSession, args: list[str]) -> None:
    raise Quit


@_command("/new")
async def _new(session: TalkSession, args: list[str]) -> None:
    chat = await session.aw.new_chat(session.world)
    session.switch(chat.chat_id, chat.name)
    session.screen.note(f"new chat {chat.chat_id}")


@_command("/chats")
async def _chats(session: TalkSession, args: list[str]) -> None:
    aw, world = session.aw, session.world
    output.print_chats(world, await aw.list_chats(world), await aw.chat_usage(world), session.chat)


@_command("/switch")
async def _switch(session: TalkSession, args: list[str]) -> None:
    if len(args) != 1:
        return _usage(session, "/switch")
    chat = await session.aw.get_chat(session.world, args[0])
    session.switch(chat.chat_id, chat.name)
    session.screen.note(f"now in chat {chat.chat_id} ({chat.name})")
    await session.desk.ask()


@_command("/rename")
async def _rename(session: TalkSession, args: list[str]) -> None:
    if not args:
        return _usage(session, "/rename")
    chat = await session.aw.rename_chat(session.world, session.chat, " ".join(args))
    session.title = chat.name
    session.screen.note(f"renamed {chat.chat_id} to {chat.name}")


@_command("/agents")
async def _agents(session: TalkSession, args: list[str]) -> None:
    output.print_agents(session.world, await session.aw.list_agents(session.world))


@_command("/agent")
async def _agent(session: TalkSession, args: list[str]) -> None:
    if len(args) != 1:
        return _usage(session, "/agent")
    agent = await session.aw.get_agent(session.world, args[0].removeprefix("@"))
    output.print_fields(f"agent {agent.name}", output.agent_doc(agent))


_command("/messages")(talk_control.show_messages)
_command("/branch")(talk_control.branch)
_command("/edit")(talk_control.edit)
_command("/undo")(talk_control.undo)


@_command("/approvals")
async def _approvals(session: TalkSession, args: list[str]) -> None:
    waiting = await session.aw.approvals(session.world)
    output.print_approvals(waiting, empty="no pending approvals", answers="slash")


@_command("/approve")
async def _approve(session: TalkSession, args: list[str]) -> None:
    if len(args) not in (1, 2) or (len(args) == 2 and args[1] not in ("once", "session", "always")):
        return _usage(session, "/approve")
    scope: Answer = "session" if args[1:] == ["session"] else "always" if args[1:] == ["always"] else "once"
    await session.desk.answer(args[0], scope)


@_command("/deny")
async def _deny(session: TalkSession, args: list[str]) -> None:
    if len(args) != 1:
        return _usage(session, "/deny")
    await session.desk.answer(args[0], "deny")


@_command("/questions")
async def _questions(session: TalkSession, args: list[str]) -> None:
    from agentworld.cli.talk_answer import AskedQuestion

    waiting = await session.aw.questions(session.world)
    if not waiting:
        session.screen.line("no questions waiting")
    for question in waiting:
        asked = AskedQuestion(agent=question.agent, question=question.question, options=tuple(question.options),
                              allow_free_text=question.allow_free_text)  # fmt: skip
        for line in asked.lines():
            session.screen.line(escape(line))
        session.screen.line(f"  question id:  {escape(question.tool_call_id)} (chat {escape(question.chat_id)})")
        session.screen.line(f"  answer:       /answer {escape(question.tool_call_id)} TEXT")


@_command("/answer")
async def _answer(session: TalkSession, args: list[str]) -> None:
    """The text is checked as at the question: a number picks that option."""
    from agentworld.cli.talk_answer import AskedQuestion, Refused

    if len(args) < 2:
        return _usage(session, "/answer")
    question = await session.aw.pending_call(session.world, args[0])
    text = " ".join(args[1:])
    if question is not None and question.kind == "question":
        asked = AskedQuestion(agent=question.agent, question=question.question, options=tuple(question.options),
                              allow_free_text=question.allow_free_text)  # fmt: skip
        found = asked.resolve(text)
        if isinstance(found, Refused):
            session.screen.error(found.hint)
            return
        text = found.answer
    await session.desk.reply(args[0], text)


@_command("/policy")
async def _policy(session: TalkSession, args: list[str]) -> None:
    rules = await session.aw.policy_rules(session.world)
    output.print_rules(session.world, [rule.describe() for rule in rules])


@_command("/export")
async def _export(session: TalkSession, args: list[str]) -> None:
    if len(args) > 1:
        return _usage(session, "/export")
    chat = await session.aw.get_chat(session.world, session.chat)
    found = await session.aw.transcript(session.world, session.chat)
    path = Path(args[0]) if args else Path(f"{chat.chat_id}.md")
    try:
        await asyncio.to_thread(path.write_text, output.markdown_transcript(chat, found), "utf-8")
    except OSError as exc:
        session.screen.error(f"cannot write {path}: {exc.strerror}")
        return
    session.screen.note(f"wrote {len(found)} messages of {chat.chat_id} to {path}")


@_command("/show")
async def _show(session: TalkSession, args: list[str]) -> None:
    if len(args) != 1 or not args[0].isdigit():
        return _usage(session, "/show")
    if not session.view.show(int(args[0])):
        session.screen.error(f"no tool result {args[0]} in this session")


@_command("/stop")
async def _stop(session: TalkSession, args: list[str]) -> None:
    await session.stop()
