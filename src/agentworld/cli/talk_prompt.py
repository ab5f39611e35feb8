"""The prompts of ``agentworld talk``: the message prompt, the approval question, the line that
answers an agent's question (``talk_answer``) and the in-place edit of a call (``talk_edit``).

The message prompt keeps a history per world (``~/.agentworld/history/WORLD``), takes several
lines (Esc-Enter or Alt-Enter starts a new one; Enter sends), completes ``@agent`` names, slash
commands and their arguments, and shows a status line. Ctrl-C clears what is typed, or — at an
empty prompt — is reported to the caller, which leaves on the second one; Ctrl-D leaves.

The approval question (``talk_question``: what keys mean there, and when) answers with ``d``,
``o``, ``s``, ``a`` then ``y``, ``e`` (edit first), or ``l`` (later: left pending), or Enter on
the highlighted choice — only once it has been read; Ctrl-C or Ctrl-D leave the request pending
at any time. The same question, with ``[n]o [y]es``, asks before messages are removed. An agent's question takes a line typed once it has been read (``talk_inputs``).
What was typed into it before it armed is the next message's starting text, as is a message
being written when a prompt is ended from outside (``interrupt``), e.g. when an approval was
answered in another process or a request arrived while the prompt waited: nothing typed is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import HTML
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input.vt100 import Vt100Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys

from agentworld.cli.talk_answer import AskedQuestion
from agentworld.cli.talk_inputs import NAMED_KEYS, AnswerCheck, answer_keys, edit_keys, key_name
from agentworld.cli.talk_question import CHOICES, CONFIRM_CHOICES, ApprovalQuestion, Arming, Choice

Answer = Literal["deny", "once", "session", "always"]
"""An answer to an approval request: deny, or approve with that scope."""
SCOPES = ("once", "session", "always")


@dataclass
class Known:
    """What completion offers, kept current by the session: the world's agents and chats, and
    the approvals and questions waiting."""

    commands: Mapping[str, str]
    """Slash commands (with their argument hint) and what each does."""
    agents: list[str] = field(default_factory=list)
    chats: list[str] = field(default_factory=list)
    approvals: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)


class TalkCompleter(Completer):
    """``@name`` anywhere, ``/command`` at the start, and the argument of ``/switch`` (chat
    ids), ``/agent`` (agent names), ``/approve`` (approval ids, then a scope), ``/deny``,
    ``/answer`` (question ids)."""

    def __init__(self, known: Known) -> None:
        self.known = known

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        word = document.get_word_before_cursor(WORD=True)
        if text.startswith("/") and " " not in text:
            for usage, meaning in self.known.commands.items():
                name = usage.split()[0]
                if name.startswith(text):
                    yield Completion(name, start_position=-len(text), display=usage, display_meta=meaning)
            return
        words = text.split()
        command = words[0] if words else ""
        argument = len(words) - (0 if text.endswith(" ") else 1)  # which word is being typed
        options = self._arguments(command, argument)
        if options is not None:
            yield from _matching(options, word)
        elif word.startswith("@"):
            for found in _matching((f"@{name}" for name in self.known.agents), word, fold=True):
                yield Completion(found.text + " ", found.start_position, display=found.text)

    def _arguments(self, command: str, position: int) -> Iterable[str] | None:
        if position == 1 and command == "/switch":
            return self.known.chats
        if position == 1 and command == "/agent":
            return self.known.agents
        if position == 1 and command in ("/approve", "/deny"):
            return self.known.approvals
        if position == 1 and command == "/answer":
            return self.known.questions
        if position == 2 and command == "/approve":
            return SCOPES
        return None


def _matching(options: Iterable[str], word: str, *, fold: bool = False) -> Iterable[Completion]:
    typed = word.lower() if fold else word
    for option in options:
        if (option.lower() if fold else option).startswith(typed):
            yield Completion(option, start_position=-len(word))


def _message_keys() -> KeyBindings:
    keys = KeyBindings()

    @keys.add("escape", "enter")  # Alt-Enter arrives as the same two keys
    def _new_line(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _clear_or_interrupt(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    return keys


def _approval_keys(prompts: Prompts) -> KeyBindings:
    """Every key goes to the question on the screen (``Prompts.question``), none into a line;
    Ctrl-C and Ctrl-D leave the request pending, armed or not (nothing runs)."""
    keys = KeyBindings()
    keys.add("c-c", eager=True)(_exit_with(None))
    keys.add("c-d", eager=True)(_exit_with(None))

    def press(event: KeyPressEvent) -> None:
        question = prompts.question
        if question is None:
            return
        now, key = time.monotonic(), event.key_sequence[-1]
        if key.key == Keys.BracketedPaste:
            question.paste(key.data, now)
        else:
            answer = question.press(key_name(key), now)
            if answer is not None:
                event.app.exit(result=answer)
                return
        prompts.redraw_when_armed()

    for name in (*NAMED_KEYS, Keys.BracketedPaste, "<any>"):
        keys.add(name, eager=True)(press)
    return keys


def _exit_with(answer: str | None) -> Callable[[KeyPressEvent], None]:
    def handler(event: KeyPressEvent) -> None:
        event.app.exit(result=answer)

    return handler


async def written_out() -> None:
    """Wait until what was printed is on the terminal, so a question arms only once the request
    it asks about is there to read: under ``patch_stdout`` a thread writes the lines, later.
    Where that thread's queue cannot be seen, a wait longer than its pauses between writes."""
    sys.stdout.flush()
    waiting = getattr(sys.stdout, "_flush_queue", None)
    if not isinstance(waiting, queue.Queue):
        await asyncio.sleep(0.3)
        return
    for _ in range(100):  # a second at most: a stuck writer must not hold the question back
        if waiting.empty():
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # the last lines taken from the queue, being written


def history_for(world: str) -> History:
    """The world's own history file (names are one name whatever their case); in memory when
    the home directory cannot hold it."""
    folder = Path.home() / ".agentworld" / "history"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return InMemoryHistory()
    return FileHistory(str(folder / world.lower()))


class KeysStayKeys(Vt100Input):
    """The terminal stays raw while lines are printed above a prompt.

    prompt_toolkit prints above a prompt (``patch_stdout``, ``run_in_terminal``) with the
    terminal back in cooked mode, for a moment. A key pressed in that moment goes through the
    terminal's line discipline instead of reaching the prompt: Ctrl-D becomes an end-of-file
    that is then lost (the person pressed it and nothing happened), text typed is echoed into
    the output. Nothing here reads a line while printing, so the terminal has no reason to
    leave raw mode: keys wait, unread, for the prompt that is drawn again after the output.
    """

    def cooked_mode(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


class Prompts:
    """The two prompts, made once per session."""

    def __init__(self, world: str, known: Known, status: Callable[[], str]) -> None:
        self.world = world
        keys = KeysStayKeys(sys.stdin)
        self._messages: PromptSession[str] = PromptSession(
            input=keys,
            history=history_for(world),
            completer=TalkCompleter(known),
            complete_while_typing=False,
            key_bindings=_message_keys(),
            bottom_toolbar=lambda: status(),
            multiline=False,
        )
        self._approvals: PromptSession[Any] = PromptSession(input=keys, key_bindings=_approval_keys(self))
        self._approvals.app.after_render += self._drawn
        self._answers: PromptSession[Any] = PromptSession(
            input=keys, key_bindings=answer_keys(lambda: self.asked, after=self.redraw_when_armed), validator=AnswerCheck(lambda: self.asked),
            validate_while_typing=False,
        )  # fmt: skip
        self._answers.app.after_render += self._drawn
        self._edits: PromptSession[Any] = PromptSession(input=keys, key_bindings=edit_keys())
        self._active: PromptSession[Any] | None = None
        self._held: BaseException | None = None
        self._carry = ""
        """What was typed but not sent: the next message prompt starts with it."""
        self._arming: asyncio.TimerHandle | None = None
        self.question: ApprovalQuestion | None = None
        """The approval question on the screen."""
        self.asked: AskedQuestion | None = None
        """The agent's question on the screen."""
        self.kept = ""
        """What was typed into questions before they armed (now carried), since the asker last
        emptied it."""
        self.on_shown: Callable[[], None] | None = None
        """Called once, just after the first prompt is drawn."""

    async def message(self) -> str:
        """The next message or command. Raises ``KeyboardInterrupt`` for Ctrl-C at an empty
        prompt, ``EOFError`` for Ctrl-D, and the reason given to ``interrupt`` (what was typed
        then is kept for the next prompt)."""
        carried, self._carry = self._carry, ""
        try:
            text = await self._ask(self._messages, HTML("<b>{}</b> › ").format(self.world), default=carried)
        except BaseException:
            self._carry = self._messages.default_buffer.text + self._carry
            raise
        return str(text)

    async def approval(
        self, *, always_means: str, choices: tuple[Choice, ...] = CHOICES, title: str = ""
    ) -> Answer | Literal["edit"] | None:
        """``deny``, ``once``, ``session``, ``always`` or ``edit``; None to leave it pending (or,
        asking an edited call's scope, to go back). ``always_means``: what an ALWAYS answer
        allows, said in its second step."""
        await written_out()
        question = self.question = ApprovalQuestion(always_means=always_means, choices=choices, title=title)
        try:
            answer = await self._ask(self._approvals, lambda: question.line(time.monotonic()))
        finally:
            self.question = None
            self._kept(question)
        return answer if answer in ("deny", "edit", *SCOPES) else None

    async def confirm(self, title: str) -> bool:
        """Whether the person says yes to ``title`` (a removal): ``y``, or Enter on the
        highlighted yes, once the question armed; ``n``, Enter alone, Ctrl-C or Ctrl-D say no.
        Asked as an approval is: keys typed before it armed answer nothing (SPEC C4)."""
        await written_out()
        question = ApprovalQuestion(choices=CONFIRM_CHOICES, title=title, reading="the question")
        self.question = question
        try:
            answer = await self._ask(self._approvals, lambda: question.line(time.monotonic()))
        finally:
            self.question = None
            self._kept(question)
        return answer == "yes"

    async def answer(self, asked: AskedQuestion) -> str | None:
        """The line typed (after the question armed) that answers ``asked``, checked by its
        ``resolve``; None to leave it waiting (Ctrl-C, Ctrl-D)."""
        await written_out()
        self.asked = asked
        try:
            typed = await self._ask(self._answers, lambda: asked.prompt(time.monotonic()))
        finally:
            self.asked = None
            self._kept(asked)
        return typed if isinstance(typed, str) else None

    async def edit(self, text: str, *, label: str) -> str | None:
        """``text`` as the person edited it in place (Enter accepts; Esc-Enter a new line);
        None when they cancelled (Ctrl-C, Ctrl-D)."""
        edited = await self._ask(self._edits, HTML("<b>{}</b> › ").format(label), default=text)
        return edited if isinstance(edited, str) else None

    def _kept(self, arming: Arming) -> None:
        """A question left the screen: what was typed into it before it armed is carried."""
        if self._arming is not None:
            self._arming.cancel()
        kept = arming.kept_text()
        self.kept += kept
        self._carry += kept

    def _drawn(self, app: Any) -> None:
        """After each drawing of a question's prompt: the first one puts the question on the
        screen, from when it arms."""
        arming = self.question or self.asked
        if arming is not None and arming.arms_at() is None:
            arming.shown(time.monotonic())
            self.redraw_when_armed()

    def redraw_when_armed(self) -> None:
        """Draw the question again when it arms (the line then says so)."""
        arming, session = self.question or self.asked, self._active
        at = arming.arms_at() if arming is not None else None
        if at is None or session is None:
            return
        if self._arming is not None:
            self._arming.cancel()
        delay = max(0.0, at - time.monotonic()) + 0.01
        self._arming = asyncio.get_running_loop().call_later(delay, session.app.invalidate)

    async def _ask(self, session: PromptSession[Any], message: Any, *, default: str = "") -> Any:
        self._active = session
        try:
            # Ctrl-C is a key here (the terminal is raw); SIGINT stays with the session.
            return await session.prompt_async(message, default=default, handle_sigint=False,
                                              pre_run=self._shown)  # fmt: skip
        finally:
            self._active = None

    def _shown(self) -> None:
        """The prompt is up (drawn right after this returns): the first time, ``on_shown`` is
        scheduled; an interruption that came before it ends it now."""
        if self.on_shown is not None:
            asyncio.get_running_loop().call_soon(self.on_shown)
            self.on_shown = None
        reason, self._held = self._held, None
        if reason is not None and self._active is not None:
            self._active.app.exit(exception=reason)

    def interrupt(self, reason: BaseException, *, later: bool = False, if_empty: bool = False) -> bool:
        """End the prompt on the terminal, raising ``reason`` from it; False when none is shown
        (with ``later``, the next prompt then ends as soon as it is shown) or, with
        ``if_empty``, when something is typed in it."""
        session = self._active
        if session is None or not session.app.is_running:
            if later:
                self._held = reason
            return False
        if if_empty and session.default_buffer.text:
            return False
        session.app.exit(exception=reason)
        return True

    def redraw(self) -> None:
        """Show a changed status line."""
        session = self._active
        if session is not None and session.app.is_running:
            session.app.invalidate()
