"""The slash commands of ``agentworld talk`` that go back in a chat (SPEC K1, K2), and the
numbered ``/messages`` they read their numbers from (``talk_rewind``: the pure parts).

- ``/branch N``: a new chat holding this one up to message N (``AgentWorld.branch_chat``);
  talk goes on there.
- ``/edit N``: a person's message N, edited in place from its text; once confirmed, it and
  everything after it are removed and the world answers the new text
  (``AgentWorld.edit_message``), streamed as for a message sent.
- ``/undo``: the last person's message and everything after it removed, once confirmed
  (``AgentWorld.delete_messages``).

Removing asks first, with the approval question's keys and arming (SPEC C4): what was typed
ahead never says yes. Each change goes through the facade, which refuses it while another
process runs the chat; that refusal is one line and nothing changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworld.cli import output
from agentworld.cli.talk_rewind import (
    Refused,
    edit_question,
    editable,
    last_persons,
    message_at,
    number_label,
    removed_note,
    undo_question,
)
from agentworld.errors import BusyError

if TYPE_CHECKING:
    from agentworld.cli.talk_session import TalkSession

COMMANDS: dict[str, str] = {
    "/branch N": "a new chat holding this one up to message N; talk goes on there",
    "/edit N": "edit your message N: what followed it is removed and the agents answer anew",
    "/undo": "remove your last message and everything after it",
}
"""The commands of this module, as ``talk_commands.COMMANDS`` lists them."""


async def show_messages(session: TalkSession, args: list[str]) -> None:
    """``/messages [N]``: the last N messages (default 20), each with its number."""
    if len(args) > 1 or (args and not args[0].isdigit()):
        session.screen.error("usage: /messages [N]")
        return
    count = int(args[0]) if args else 20
    found = await session.aw.transcript(session.world, session.chat)
    first = max(len(found) - count, 0) if count else len(found)
    if first == len(found):
        session.screen.line("no messages yet" if not found else "no messages shown")
        return
    refused = output.refused_calls(found)
    for number, message in enumerate(found[first:], first + 1):
        label = number_label(number, len(found))
        first_line, *more = output.message_lines(message, refused=refused) or [""]
        session.screen.line(f"[dim]{label}[/dim] {first_line}")
        for line in more:
            session.screen.line(f"{' ' * len(label)} {line}")


async def branch(session: TalkSession, args: list[str]) -> None:
    """``/branch N``: talk goes on in a new chat that holds this one up to message N."""
    found = message_at(args, await session.aw.transcript(session.world, session.chat), usage="/branch N")
    if isinstance(found, Refused):
        session.screen.error(found.reason)
        return
    source = session.chat
    chat = await session.aw.branch_chat(session.world, found.message.message_id, chat_id=source)
    session.switch(chat.chat_id, chat.name)
    session.screen.note(f"⑂ branched at {found.label}: now in chat {chat.chat_id} ({chat.name}), which holds "
                        f"#1–{found.label} of {source} (/switch {source} goes back)")  # fmt: skip


async def edit(session: TalkSession, args: list[str]) -> None:
    """``/edit N``: a person's message N edited in place; what followed it is removed (asked
    first) and the world answers the new text."""
    messages = await session.aw.transcript(session.world, session.chat)
    found = message_at(args, messages, usage="/edit N")
    if not isinstance(found, Refused):
        found = editable(found)
    if isinstance(found, Refused):
        session.screen.error(found.reason)
        return
    session.screen.note(f"editing {found.label}: Enter sends it, Esc-Enter starts a new line, Ctrl-C cancels")
    text = await session.prompts.edit(found.message.content or "", label=f"edit {found.label}")
    if text is None or text == (found.message.content or ""):
        session.screen.note("not edited: nothing changed" if text is None else "the text is unchanged: nothing changed")
        return
    if not text.strip():
        session.screen.error("an empty message is not sent: nothing changed (/undo removes a message)")
        return
    if len(messages) > found.number and not await confirm(session, edit_question(found, len(messages))):
        session.screen.note("not edited: nothing changed")
        return
    work = session.aw.edit_message(session.world, found.message.message_id, text, chat_id=session.chat)
    try:
        result = await session.turn(work)
    except BusyError as exc:
        session.screen.error(f"{exc}; nothing changed")
        return
    if result is not None:
        for notice in result.notices:
            session.screen.note(notice)
    await session.desk.ask()


async def undo(session: TalkSession, args: list[str]) -> None:
    """``/undo``: the last person's message and everything after it removed (asked first)."""
    if args:
        session.screen.error("usage: /undo")
        return
    messages = await session.aw.transcript(session.world, session.chat)
    found = last_persons(messages)
    if isinstance(found, Refused):
        session.screen.error(found.reason)
        return
    if not await confirm(session, undo_question(found, len(messages))):
        session.screen.note("nothing removed")
        return
    try:
        removed = await session.aw.delete_messages(session.world, found.message.message_id, chat_id=session.chat)
    except BusyError as exc:
        session.screen.error(f"{exc}; nothing changed")
        return
    session.screen.note(removed_note(found.number, removed))


async def confirm(session: TalkSession, question: str) -> bool:
    """Whether the person says yes to ``question`` (see ``Prompts.confirm``); what they typed
    before it armed waits at the next prompt, and a line says so."""
    session.prompts.kept = ""
    answer = await session.prompts.confirm(question)
    if session.prompts.kept:
        session.screen.note("what you typed before the question was read answered nothing: it waits at the prompt")
    return answer
