"""Going back in a chat from ``agentworld talk`` (SPEC K1, K2), apart from the terminal: the
message numbers ``/messages`` shows (``#1`` is the chat's first message, as in
``agentworld messages``), which message ``/branch N``, ``/edit N`` and ``/undo`` name, the
question asked before messages are removed, and how a change another process made to the chat
(a ``crud`` event) is said.

A message's number is its place in the chat's transcript, every message counted (a person's, an
agent's, a tool's result, a system notice), so ``/branch 3`` keeps exactly what
``agentworld messages WORLD --json`` lists first three.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentworld.models import Message


@dataclass(frozen=True, slots=True)
class Found:
    number: int
    """The message's place in the transcript, from 1."""
    message: Message

    @property
    def label(self) -> str:
        return f"#{self.number}"


@dataclass(frozen=True, slots=True)
class Refused:
    reason: str


def parse_number(args: Sequence[str]) -> int | None:
    """The message number in a command's arguments: one word, ``N`` or ``#N`` with N ≥ 1."""
    if len(args) != 1:
        return None
    word = args[0].removeprefix("#")
    if not (word.isascii() and word.isdigit()) or int(word) < 1:
        return None
    return int(word)


def message_at(args: Sequence[str], messages: Sequence[Message], *, usage: str) -> Found | Refused:
    """The message the arguments name in ``messages`` (the chat's transcript), or why none."""
    number = parse_number(args)
    if number is None:
        return Refused(f"usage: {usage} (N: the message's number, as /messages shows it)")
    if not messages:
        return Refused("this chat has no messages yet")
    if number > len(messages):
        last = len(messages)
        return Refused(f"there is no message #{number}: this chat has {last} (#1–#{last}; /messages shows them)")
    return Found(number, messages[number - 1])


def is_persons(message: Message) -> bool:
    """Whether a person wrote it (a ``user`` message: what ``send`` and the prompt post)."""
    return message.role == "user"


def editable(found: Found) -> Found | Refused:
    """``found`` when it is a person's message (only those are edited), else why not."""
    if is_persons(found.message):
        return found
    whose = "a tool's result" if found.message.role == "tool" else f"{found.message.sender}'s"
    return Refused(f"message {found.label} is {whose}, not a person's: only a person's message is "
                   f"edited (/branch {found.number} starts another path from it)")  # fmt: skip


def last_persons(messages: Sequence[Message]) -> Found | Refused:
    """The last message a person wrote in the chat, or why there is none."""
    for index in range(len(messages) - 1, -1, -1):
        if is_persons(messages[index]):
            return Found(index + 1, messages[index])
    return Refused("no message of a person in this chat: nothing to undo")


def after(found: Found, count: int) -> int:
    """How many messages follow ``found`` in a chat of ``count`` messages."""
    return count - found.number


def _messages(count: int) -> str:
    return f"{count} message{'s' if count != 1 else ''}"


def undo_question(found: Found, count: int) -> str:
    """The question asked before ``/undo`` removes ``found`` and what follows it."""
    following = after(found, count)
    tail = f" and the {_messages(following)} after it" if following else ""
    return f"remove {found.label} ({found.message.sender}'s message){tail}?"


def edit_question(found: Found, count: int) -> str:
    """The question asked before an edit of ``found`` removes the messages after it."""
    return f"replace {found.label} and remove the {_messages(after(found, count))} after it?"


def removed_note(number: int, removed: int) -> str:
    """What ``/undo`` says once it removed ``removed`` messages from ``#number`` on."""
    return f"✂ removed {_messages(removed)} (#{number} on)"


def number_label(number: int, last: int) -> str:
    """``#number`` padded to the width of ``#last``, so numbered lines line up."""
    return f"#{number}".ljust(len(f"#{last}"))


def cut_note(event: Any, chat_id: str, *, here: bool) -> str | None:
    """What talk says about a ``crud`` event (``models.events.CrudEvent``) that changed the chat
    it shows (``chat_id``): messages removed from it, by an edit or a delete (``here``: by this
    session; else by another process), or a branch made from it elsewhere; None for anything
    else."""
    data: dict[str, Any] = event.data or {}
    if event.entity == "message" and event.operation == "delete" and event.chat_id == chat_id:
        removed = _messages(len(data.get("messageIds") or ()) or 1)
        if here:
            if data.get("edited"):
                return f"✎ edited: {removed} removed (the old text and what followed it)"
            return None  # /undo says it, with the number
        how = ("a message was edited there: the chat goes on from the new text"
               if data.get("edited") else "deleted from a message on")  # fmt: skip
        return f"✂ {removed} of this chat removed by another process ({how}); /messages shows it now"
    source = data.get("branchOf") or {}
    if (not here and event.entity == "chat" and event.operation == "create"
            and isinstance(source, dict) and source.get("chatId") == chat_id):  # fmt: skip
        branch = event.chat_id or event.name
        return f"⑂ chat {branch} was branched from this chat elsewhere (/switch {branch} goes there)"
    return None
