"""Approvals at the prompt of ``agentworld talk``, and what other processes do meanwhile.

After each turn the desk asks every request of the chat in turn, each question with its own
arming (SPEC A2: a structured decision, never JSON typed into the chat; C4: no key answers
before the question was read, see ``talk_question``). While a prompt waits it looks at the
stored requests every ``POLL_SECONDS``: the process that runs a chat may be another one (a
second terminal, ``agentworld approve``, later the web UI), and approvals are stored, not
in-process futures (SPEC A6) — so a request answered elsewhere leaves the question, a request
in this chat is asked, and one in another chat is announced. The same look shows what was said
in the chat by other processes (the one that ran an approved call, a person in another
terminal or the web UI), and keeps the status line and completion current.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from rich.markup import escape

from agentworld.cli import output
from agentworld.cli.talk_prompt import Answer

if TYPE_CHECKING:
    from agentworld.cli.talk_session import TalkSession
    from agentworld.models.pending import PendingApproval

POLL_SECONDS = 0.5
"""How often a waiting prompt looks for approvals asked or answered by other processes."""

logger = logging.getLogger("agentworld.cli")


class ApprovalsWaiting(Exception):
    """A request of this chat arrived while the prompt was empty: ask it now."""


class AnsweredElsewhere(Exception):
    """The request being asked was answered by another process."""


class ApprovalDesk:
    def __init__(self, session: TalkSession) -> None:
        self.session = session
        self.later: set[str] = set()
        """Requests the person left pending in this chat: not asked again on their own."""
        self._announced: set[str] = set()
        self._waiting: list[PendingApproval] = []
        self._asking: str | None = None
        self._gone: str | None = None
        """The request on the screen that was answered elsewhere, once said."""
        self._following: tuple[str, int] | None = None
        """The chat whose transcript is followed, and the position read up to."""

    async def ask(self) -> None:
        """Ask each request of the chat, oldest first, until none is left to ask."""
        session = self.session
        while True:
            waiting = await session.aw.approvals(session.world, chat_id=session.chat)
            waiting = [p for p in waiting if p.tool_call_id not in self.later]
            if not waiting:
                return
            request = waiting[0]
            self._announced.add(request.tool_call_id)
            output.print_approvals([request], answers="none")
            self._asking = request.tool_call_id
            session.screen.prompting = True
            try:
                answer = await session.prompts.approval(always_means=always_means(request))
            except AnsweredElsewhere:
                continue  # ``refresh`` said so, before what the answer caused
            finally:
                self._asking = None
                session.screen.prompting = False
                if session.prompts.kept:
                    session.screen.note("what you typed before the question was read answered "
                                        "nothing: it waits at the prompt")  # fmt: skip
            if answer is None:
                self.later.add(request.tool_call_id)
                session.screen.note("left pending: /approvals lists it; /approve or /deny answers it")
                continue
            await self.answer(request.tool_call_id, answer, ask_next=False)

    async def answer(self, approval_id: str, answer: Answer, *, ask_next: bool = True) -> None:
        """Deny, or approve with a scope; the chat runs on, and its next requests are asked.

        The answer is announced before the turn it starts (whose output follows it) — but only
        for a request that is waiting: an unknown or answered id is refused by the facade, and
        that one line is all the person should see (docs/cli.md)."""
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
                session.screen.note(f"approved {approval_id} ({answer})")
            work = session.aw.approve(session.world, approval_id, decision="approve", scope=answer)
        try:
            await session.turn(work)
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
        waiting = await session.aw.approvals(session.world)
        ids = {p.tool_call_id for p in waiting}
        self._waiting = waiting
        session.known.approvals = sorted(ids)
        if self._asking is not None and self._asking not in ids and self._gone != self._asking:
            # Said here, in this look, so it comes before the call's result and the answer
            # that ``_follow`` shows next, whenever the prompt's task gets to run.
            self._gone = self._asking
            session.screen.note(f"approval {self._asking} was answered elsewhere")
            session.prompts.interrupt(AnsweredElsewhere())
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
            message = output.shown_text(" ".join(request.message.split()))  # a model's text, escaped
            session.screen.line(f"[yellow]⏸ approval waiting in {where}: {message}[/yellow]")
        self._announced &= ids
        await self._follow()
        aw, world = session.aw, session.world
        session.title = (await aw.get_chat(world, session.chat)).name
        session.known.agents = [a.name for a in await aw.list_agents(world)]
        session.known.chats = [c.chat_id for c in await aw.list_chats(world)]
        session.prompts.redraw()

    async def _follow(self) -> None:
        """Show the messages stored in the chat since the last look that this process did not
        show (from the position the chat was opened at: its past is not repeated)."""
        session = self.session
        if self._following is None or self._following[0] != session.chat:
            self._following = (session.chat, await session.aw.transcript_position())
            return
        page = await session.aw.transcript_page(session.world, session.chat, after=self._following[1])
        self._following = (session.chat, page.next_after)
        for message in page.messages:
            session.view.stored(message)

    def status(self) -> str:
        """The status line: world, chat title, who is busy, how many approvals wait."""
        session = self.session
        busy = ", ".join(session.view.busy) or ("idle" if session.idle() else "working")
        count = len(self._waiting)
        waiting = f"{count} approval{'s' if count != 1 else ''} waiting" if count else "no approvals waiting"
        return f" {session.world} · {session.title or 'opening…'} · {busy} · {waiting}"


def always_means(request: PendingApproval) -> str:
    """What an ALWAYS answer to ``request`` would allow, in words (the grant's rule: the same
    commands or paths with any arguments, for every agent and chat of the world)."""
    import json

    from agentworld.approval.grants import (
        FILE_TOOLS,
        SHELL_TOOL,
        file_path,
        shell_shape,
        written_targets,
    )
    from agentworld.approval.shell_view import escape_controls

    tool = escape_controls(request.tool_name)
    everyone = "by any agent in any chat"
    try:
        arguments = json.loads(request.arguments)
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return f"this {tool} call only (it cannot be remembered)"
    if request.tool_name == SHELL_TOOL:
        shape = shell_shape(arguments)
        if shape is None or not shape.roots:
            return "this command line only (it cannot be remembered as a rule)"
        names = ", ".join(f"`{escape_controls(root)}`" for root in sorted(shape.roots))
        writes = ""
        if shape.redirects:
            targets = written_targets(arguments)
            named = ", ".join(f"`{escape_controls(t)}`" for t in sorted(set(targets or ())))
            writes = f", writing only to {named}" if named else ", writing no file"
        return f"every {names} command (any arguments{writes}) {everyone}"
    if request.tool_name in FILE_TOOLS:
        path = file_path(request.tool_name, arguments)
        if path is None:
            return f"this {tool} call only (it cannot be remembered)"
        return f"{tool} of `{escape_controls(path)}` {everyone}"
    return f"every {tool} call, whatever its arguments, {everyone}"
