"""Approvals and agents' questions at the prompt of ``agentworld talk``, and what other
processes do meanwhile.

After each turn the desk asks every approval request and question of the chat in turn, oldest
first, each with its own arming (SPEC A2: a structured decision, never JSON typed into the
chat; C4: no key answers before the question was read, see ``talk_question``; how each is
shown and asked is ``talk_asking``). While a prompt waits it looks at the stored requests and
questions every ``POLL_SECONDS``: the process that runs a chat may be another one (a second
terminal, ``agentworld approve`` or ``answer``, the web UI), and they are stored, not
in-process futures (SPEC A6) — so one answered elsewhere leaves the prompt, one in this chat is
asked, and one in another chat is announced. The same look shows what was said
in the chat by other processes (the one that ran an approved call, a person in another
terminal or the web UI), says when they removed messages from it or branched it (their
``crud`` events in the world's event log), and keeps the status line and completion current.
On PostgreSQL, where talk follows the log as it comes (``live_elsewhere``), an answer to the
request on the screen and a change to the chat are said as they arrive, before the messages
stored after them.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from agentworld.cli import output
from agentworld.cli.talk_asking import (
    LEFT_WAITING,
    Decided,
    Later,
    Reply,
    ask_approval,
    ask_question,
)
from agentworld.cli.talk_prompt import Answer
from agentworld.cli.talk_rewind import cut_note

if TYPE_CHECKING:
    from agentworld.cli.talk_session import TalkSession
    from agentworld.models import Message
    from agentworld.models.events import WorldEvent
    from agentworld.models.pending import PendingApproval, PendingQuestion

POLL_SECONDS = 0.5
"""How often a waiting prompt looks for approvals asked or answered by other processes."""

logger = logging.getLogger("agentworld.cli")


class ApprovalsWaiting(Exception):
    """A request or question of this chat arrived while the prompt was empty: ask it now."""


class AnsweredElsewhere(Exception):
    """The request or question being asked was answered by another process."""


class ApprovalDesk:
    def __init__(self, session: TalkSession) -> None:
        self.session = session
        self.later: set[str] = set()
        """Requests and questions the person left waiting in this chat: not asked again on
        their own."""
        self._announced: set[str] = set()
        self._waiting: list[PendingApproval] = []
        self._questions: list[PendingQuestion] = []
        self._asking: str | None = None
        self._asking_kind = "approval"
        self._gone: str | None = None
        """The request on the screen that was answered elsewhere, once said."""
        self._following: tuple[str, int] | None = None
        """The chat followed, and the position in the world's event log read up to."""

    async def ask(self) -> None:
        """Ask each request and question of the chat, oldest first, until none is left."""
        session = self.session
        while True:
            waiting = await self._waiting_here()
            if not waiting:
                return
            request = waiting[0]
            self._announced.add(request.tool_call_id)
            self._asking, self._asking_kind = request.tool_call_id, request.kind
            session.screen.prompting = True
            session.prompts.kept = ""
            try:
                if request.kind == "question":
                    outcome = await ask_question(session, request)
                else:
                    outcome = await ask_approval(session, request)
            except AnsweredElsewhere:
                continue  # ``refresh`` said so, before what the answer caused
            finally:
                self._asking = None
                session.screen.prompting = False
                if session.prompts.kept:
                    session.screen.note("what you typed before the question was read answered "
                                        "nothing: it waits at the prompt")  # fmt: skip
            match outcome:
                case Later():
                    self.later.add(request.tool_call_id)
                    session.screen.note(LEFT_WAITING[request.kind])
                case Reply(text=text):
                    await self.reply(request.tool_call_id, text, ask_next=False)
                case Decided(answer=answer, arguments=arguments):
                    await self.answer(request.tool_call_id, answer, ask_next=False, arguments=arguments)

    async def _waiting_here(self) -> list[PendingApproval | PendingQuestion]:
        """The requests and questions of this chat that wait to be asked, oldest first."""
        session = self.session
        approvals = await session.aw.approvals(session.world, chat_id=session.chat)
        questions = await session.aw.questions(session.world, chat_id=session.chat)
        waiting: list[PendingApproval | PendingQuestion] = [*approvals, *questions]
        waiting.sort(key=lambda p: p.created_at)
        return [p for p in waiting if p.tool_call_id not in self.later]

    async def answer(
        self, approval_id: str, answer: Answer, *, ask_next: bool = True, arguments: dict[str, Any] | None = None
    ) -> None:
        """Deny, or approve with a scope (with ``arguments``: the call as the person edited
        it); the chat runs on, and its next requests are asked.

        The answer is announced before the turn it starts (whose output follows it) — but only
        for a request that is waiting: an unknown or answered id is refused by the facade, and
        that one line is all the person should see (docs/cli.md). An edited call the runtime
        refuses (invalid, or denied by the policy) is that one line too; the request waits."""
        session = self.session
        try:
            request = await session.aw.pending_call(session.world, approval_id)
        except Exception as exc:
            session.report(exc)
            return
        waiting = request is not None and request.kind == "approval" and request.status == "pending"
        if answer == "deny":
            if waiting:
                session.screen.note(f"denied {approval_id}")
            work = session.aw.approve(session.world, approval_id, decision="deny")
        else:
            if waiting:
                session.screen.note(f"approved {approval_id} ({answer})" + (" as edited" if arguments else ""))
            work = session.aw.approve(session.world, approval_id, decision="approve", scope=answer,
                                      arguments=arguments)  # fmt: skip
        try:
            await session.turn(work)
        except Exception as exc:
            session.report(exc)
        if ask_next:
            await self.ask()

    async def reply(self, question_id: str, text: str, *, ask_next: bool = True) -> None:
        """Answer an agent's question with ``text``; the chat runs on, and what waits next is
        asked. Announced, as an approval's answer is, only for a question that waits."""
        session = self.session
        try:
            question = await session.aw.pending_call(session.world, question_id)
        except Exception as exc:
            session.report(exc)
            return
        if question is not None and question.kind == "question" and question.status == "pending":
            session.screen.note(f"answered {question_id}: {' '.join(text.split())}")
        try:
            await session.turn(session.aw.answer(session.world, question_id, text))
        except Exception as exc:
            session.report(exc)
        if ask_next:
            await self.ask()

    async def watch(self) -> None:
        """Look again every ``POLL_SECONDS`` while a prompt waits (the session owns this task)."""
        while True:
            await asyncio.sleep(POLL_SECONDS)
            if self.session.screen.prompting and self.session.opened:
                try:
                    await self.refresh()
                except Exception:  # a busy or vanished database: the next look may succeed
                    logger.debug("talk: looking for approvals failed", exc_info=True)

    async def refresh(self) -> None:
        session = self.session
        stored = await self._logged()  # first: a request removed with messages is gone next
        approvals = await session.aw.approvals(session.world)
        questions = await session.aw.questions(session.world)
        self._waiting, self._questions = approvals, questions
        waiting: list[PendingApproval | PendingQuestion] = [*approvals, *questions]
        ids = {p.tool_call_id for p in waiting}
        session.known.approvals = sorted(p.tool_call_id for p in approvals)
        session.known.questions = sorted(p.tool_call_id for p in questions)
        if self._asking is not None and self._asking not in ids:
            self._left(self._asking)
        for request in waiting:
            known = request.tool_call_id in self._announced or request.tool_call_id in self.later
            if known or (request.chat_id == session.chat and self._asking is not None):
                continue  # asked already, or asked after the one on the screen
            if request.chat_id == session.chat and session.prompts.interrupt(
                ApprovalsWaiting(), if_empty=True
            ):
                continue
            self._announced.add(request.tool_call_id)
            where = "this chat" if request.chat_id == session.chat else f"chat {escape(request.chat_id)}"
            said = request.question if request.kind == "question" else request.message
            message = output.shown_text(" ".join(said.split()))  # a model's text, escaped
            session.screen.line(f"[yellow]⏸ {request.kind} waiting in {where}: {message}[/yellow]")
        self._announced &= ids
        for found in stored:
            session.view.stored(found)
        aw, world = session.aw, session.world
        session.title = (await aw.get_chat(world, session.chat)).name
        session.known.agents = [a.name for a in await aw.list_agents(world)]
        session.known.chats = [c.chat_id for c in await aw.list_chats(world)]
        session.prompts.redraw()

    def _left(self, request_id: str) -> None:
        """The request on the screen was answered (or removed) by another process: said now,
        so it comes before the call's result and the answer shown next, whenever the prompt's
        task gets to run."""
        if self._asking != request_id or self._gone == request_id:
            return
        self._gone = request_id
        self.session.screen.note(f"{self._asking_kind} {request_id} was answered elsewhere")
        self.session.prompts.interrupt(AnsweredElsewhere())

    def seen(self, event: WorldEvent) -> None:
        """An event another process stored, about to be shown (on PostgreSQL, followed as it
        comes): the answer to the request on the screen leaves the prompt before it."""
        from agentworld.models.events import ApprovalEvent, QuestionEvent

        match event:
            case ApprovalEvent(phase="answered", approval_id=answered) | QuestionEvent(
                phase="answered", question_id=answered
            ):
                self._left(answered)
            case _:
                pass

    async def changed(self, event: WorldEvent) -> None:
        """A change another process made (a ``crud`` event, followed as it comes on
        PostgreSQL), said in the log's order, before the messages stored after it; a request on
        the screen that it removed leaves the prompt (a look at what waits) before them too."""
        session = self.session
        if event.event_id in session.view.changes:
            return
        session.view.changes.add(event.event_id)
        said = cut_note(event, session.chat, here=False)
        if said is None:
            return
        session.screen.note(said)
        if self._asking is not None:
            await self.refresh()

    async def _logged(self) -> list[Message]:
        """What other processes did in the chat since the last look, from the world's event log
        (from the position the chat was opened at: its past is not repeated): their changes to
        it (messages removed by an edit or a delete, a branch made from it) said now — the
        history on the screen is not what the chat holds any more — and the messages they
        stored, returned to be shown (``EventView.stored`` passes over those shown already)."""
        from agentworld.models.events import CrudEvent

        session = self.session
        after = self._following[1] if self._following is not None and self._following[0] == session.chat else None
        logged, position = await session.aw.logged_since(session.world, after)
        self._following = (session.chat, position)
        stored: list[Message] = []
        for event in logged:
            if isinstance(event, CrudEvent):
                said = None if event.event_id in session.view.changes else cut_note(event, session.chat, here=False)
                if said is not None:
                    session.screen.note(said)
            elif event.message.chat_id == session.chat:
                stored.append(event.message)
        return stored

    def status(self) -> str:
        """The status line: world, chat title, who is busy, how many approvals and questions
        wait."""
        session = self.session
        busy = ", ".join(session.view.busy) or ("idle" if session.idle() else "working")
        count = len(self._waiting)
        waiting = f"{count} approval{'s' if count != 1 else ''} waiting" if count else "no approvals waiting"
        if asked := len(self._questions):
            waiting += f" · {asked} question{'s' if asked != 1 else ''} waiting"
        return f" {session.world} · {session.title or 'opening…'} · {busy} · {waiting}"

