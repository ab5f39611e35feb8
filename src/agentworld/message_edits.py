"""Editing a person's message and deleting messages onward (SPEC K2): the part of ``AgentWorld``
that takes a chat back to an earlier point (the work is ``runtime.cutting``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworld.models import Message
from agentworld.run_results import Posting, SendResult, StopRequest, run_and_report
from agentworld.storage.cuts import refuse_unless_editable
from agentworld.storage.sql import SQLStorage

if TYPE_CHECKING:
    from agentworld.runtime.world import WorldRuntime


class MessageEdits:
    """``AgentWorld``'s edits and deletes onward (mixed in; the names below are its own)."""

    storage: SQLStorage
    stop_request: StopRequest | None

    if TYPE_CHECKING:

        async def runtime(self, world: str) -> WorldRuntime: ...

        async def current_chat(self, world: str) -> str: ...

        async def _refuse_unpostable(self, world: str, text: str, sender: str) -> None: ...

    async def edit_message(
        self,
        world: str,
        message_id: str,
        text: str,
        *,
        chat_id: str | None = None,
        sender: str | None = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Replace a person's message by ``text`` (SPEC K2): the message and everything after
        it in the chat are removed — transcript, agents' memories, waiting approvals, questions
        and client calls, queued work — and ``text`` is posted in its place from ``sender``
        (default: the same sender); then the world runs as for ``send``. Refused: an unknown
        message (``NotFoundError``), one that is not a person's (``NotEditableError``), a chat
        another process runs (``BusyError``)."""
        runtime, chat, who = await self._edit_target(world, message_id, text, chat_id, sender)

        async def post() -> int:
            outcome = await runtime.cut(chat, message_id, text=text, sender=who, actor=who)
            assert outcome.cut.after_seq is not None  # an edit posts its message
            return outcome.cut.after_seq

        return await run_and_report(
            self.storage, runtime, world, chat, Posting(post), timeout=timeout, stop=self.stop_request
        )

    async def post_edit(
        self,
        world: str,
        message_id: str,
        text: str,
        *,
        chat_id: str | None = None,
        sender: str | None = None,
    ) -> Message:
        """``edit_message`` without waiting, as ``post`` is to ``send``: returns the new message
        at once; the world answers it in the background."""
        runtime, chat, who = await self._edit_target(world, message_id, text, chat_id, sender)
        outcome = await runtime.cut(chat, message_id, text=text, sender=who, actor=who)
        assert outcome.message is not None
        return outcome.message

    async def _edit_target(
        self, world: str, message_id: str, text: str, chat_id: str | None, sender: str | None
    ) -> tuple[WorldRuntime, str, str]:
        """The runtime, the chat and the sender of an edit, refused as ``edit_message`` says."""
        runtime = await self.runtime(world)
        chat = chat_id if chat_id is not None else await self.current_chat(world)
        asked = await self.storage.cuts.message(world, chat, message_id)
        refuse_unless_editable(asked)
        who = sender if sender is not None else asked.sender
        await self._refuse_unpostable(world, text, who)
        return runtime, chat, who

    async def delete_messages(
        self, world: str, message_id: str, *, chat_id: str | None = None, actor: str = "human"
    ) -> int:
        """Remove a message and everything after it in its chat (SPEC K2), as ``edit_message``
        does without posting anything; returns how many transcript messages were removed. A
        tool result or approval request is removed with the agent's call it answers."""
        runtime = await self.runtime(world)
        chat = chat_id if chat_id is not None else await self.current_chat(world)
        outcome = await runtime.cut(chat, message_id, actor=actor)
        return len(outcome.removed)
