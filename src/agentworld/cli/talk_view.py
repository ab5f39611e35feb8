"""What ``agentworld talk`` shows of a world's events: answers streamed as they come, per
agent, with how long each took; each tool call and its result on one line (numbered, so
``/show N`` can expand it); approval requests; system errors marked as such.

``EventView`` is a subscriber of the world's event bus (``WorldRuntime.bus``). It keeps the
little state the display needs — the stream open now, the numbers given to tool calls, who is
busy — and writes through ``Screen``, the one place that knows how to print while the prompt
may be on the terminal. Models are imported when the first event arrives, never on the path
to the first prompt.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentworld.approval.shell_view import escape_controls
from agentworld.cli import output
from agentworld.cli.output import shown_text as escape
from agentworld.cli.talk_rewind import cut_note

if TYPE_CHECKING:
    from rich.console import Console

    from agentworld.models import Message
    from agentworld.models.events import SSEEvent, SystemEvent, WorldEvent

_ERASE_LINE = "\r\x1b[2K"
"""Back to the start of the line and erase it: how a transient line is replaced."""
TURN_LIMIT_MARKER = "Turn limit reached"
BUDGET_MARKER = "Budget reached"
"""An agent's hand-back to the people (SPEC R4) is shown as a system notice, not an answer."""


class Screen:
    """Where talk writes. Streamed text goes out as it comes while no prompt is shown; with
    the prompt on the terminal (``prompting``), prompt_toolkit's stdout proxy prints whole
    lines above it, so a fragment waits there for its line's end."""

    def __init__(self) -> None:
        self._prompting = False
        self._console: Console | None = None
        self._transient = False
        self._partial = ""
        """What is written of a line not ended yet (a streamed answer's start and text)."""

    @property
    def prompting(self) -> bool:
        return self._prompting

    @prompting.setter
    def prompting(self, value: bool) -> None:
        """A prompt that comes up while a streamed line is open would be drawn after its text,
        and the rest of the text after the prompt: the line's start leaves the terminal and
        waits in the stdout proxy, to be printed whole above the prompt when the line ends."""
        if value and not self._prompting and self._partial:
            sys.stdout.write(_ERASE_LINE)
            sys.stdout.flush()
            sys.stdout.write(self._partial)
        self._prompting = value

    @property
    def console(self) -> Console:
        if self._console is None:  # made inside patch_stdout, so it writes through the proxy
            from rich.console import Console

            self._console = Console(highlight=False, soft_wrap=True)
        return self._console

    def fragment(self, text: str) -> None:
        self.clear_transient()
        sys.stdout.write(text)
        self._partial = (self._partial + text).rpartition("\n")[2]
        if not self.prompting:
            sys.stdout.flush()

    def line(self, markup: str) -> None:
        """One line of rich markup (escape what came from outside)."""
        self.clear_transient()
        self.console.print(markup)
        self._partial = ""

    def start(self, markup: str) -> None:
        """The start of a line that streamed text continues."""
        self.clear_transient()
        with self.console.capture() as rendered:
            self.console.print(markup, end="")
        text = rendered.get()
        sys.stdout.write(text)
        self._partial += text
        if not self.prompting:
            sys.stdout.flush()

    def transient(self, text: str) -> None:
        """A line that the next output replaces ("planner is thinking… 3 s"); not shown
        under a prompt, which has its status line for that."""
        if self.prompting:
            return
        sys.stdout.write(f"{_ERASE_LINE}{text}")
        sys.stdout.flush()
        self._transient = True

    def clear_transient(self) -> None:
        if self._transient:
            self._transient = False
            sys.stdout.write(_ERASE_LINE)
            sys.stdout.flush()

    def note(self, text: str) -> None:
        self.line(f"[dim]{escape(text)}[/dim]")

    def error(self, text: str) -> None:
        self.line(f"[bold red]✖ {escape(' '.join(text.split()))}[/bold red]")


@dataclass
class _Stream:
    agent: str
    message_id: str
    started: float
    text: list[str] = field(default_factory=list)
    shown: bool = False
    """Whether its line was started (at the first text: a response of tool calls has none)."""


@dataclass
class EventView:
    """Shows the events of one chat (``chat_id``, which ``/switch`` changes)."""

    screen: Screen
    chat_id: str = ""
    width: int = 100
    busy: dict[str, float] = field(default_factory=dict)
    """Agents whose model call runs now, with when it started (for the status line)."""
    results: dict[int, tuple[str, str]] = field(default_factory=dict)
    """Tool results by their number: the tool's name and the full result (``/show N``)."""
    shown: set[str] = field(default_factory=set)
    """The stored messages of the chat that came by (the person's own are not echoed)."""
    changes: set[str] = field(default_factory=set)
    """The ``crud`` events that came by on this process's bus: changes made here, which the
    look at the event log for other processes' changes (``talk_desk``) passes over."""
    _numbers: dict[str, tuple[int, str]] = field(default_factory=dict)
    _stream: _Stream | None = None
    _streamed: dict[str, str] = field(default_factory=dict)
    _last_step: float = field(default_factory=time.monotonic)

    def on_event_elsewhere(self, event: WorldEvent) -> None:
        """An event another process published (read from the log): a message is shown as one
        read from storage — a person's message was typed elsewhere, so it is echoed."""
        from agentworld.models.events import MessageEvent

        if isinstance(event, MessageEvent):
            self.stored(event.message)
            return
        self.on_event(event)

    def on_event(self, event: WorldEvent) -> None:
        """The bus subscriber: show what concerns this chat."""
        from agentworld.models.events import CrudEvent, MessageEvent, SSEEvent, SystemEvent

        if isinstance(event, CrudEvent):
            self.changes.add(event.event_id)
            if (said := cut_note(event, self.chat_id, here=True)) is not None:
                self.close_stream()
                self.screen.note(said)
            return
        if event.chat not in (self.chat_id, None):
            return
        match event:
            case SSEEvent():
                self._sse(event)
            case MessageEvent() if event.message.message_id not in self.shown:
                self.close_stream()
                self.shown.add(event.message.message_id)
                self._message(event.message)
                self._last_step = time.monotonic()
            case SystemEvent():
                self._system(event)
            case _:
                pass  # approval requests are asked by the session, the rest is bookkeeping

    def stored(self, message: Message) -> None:
        """A message of the chat read from storage: what another process (it ran the chat,
        or a person typed there) said; shown unless it came by already."""
        if message.chat_id != self.chat_id or message.message_id in self.shown:
            return
        self.close_stream()
        self.shown.add(message.message_id)
        self._message(message, live=False)

    def turn_started(self) -> None:
        self._last_step = time.monotonic()

    def tick(self) -> None:
        """While a model is called and has said nothing yet: who is thinking, for how long."""
        stream = self._stream
        if stream is not None and not stream.shown:
            took = time.monotonic() - stream.started
            self.screen.transient(f"{escape_controls(stream.agent)} is thinking… {took:.0f} s")

    def close_stream(self) -> None:
        """End a streamed answer's line (before anything else is printed)."""
        stream, self._stream = self._stream, None
        if stream is not None and stream.shown:
            self.screen.fragment("\n")
        self.screen.clear_transient()

    # -- streaming ---------------------------------------------------------------------

    def _sse(self, event: SSEEvent) -> None:
        stream = self._stream
        match event.phase:
            case "start":
                self.close_stream()
                self.busy[event.agent] = time.monotonic()
                self._stream = _Stream(event.agent, event.message_id, time.monotonic())
                self.tick()
            case "chunk" if stream is not None and stream.message_id == event.message_id:
                if not stream.shown:
                    stream.shown = True
                    self.screen.start(f"[bold cyan]{escape(event.agent)}[/bold cyan]: ")
                stream.text.append(event.content)
                self.screen.fragment(escape_controls(event.content, keep="\n\t"))
            case "end":
                self.busy.pop(event.agent, None)
                if stream is not None and stream.message_id == event.message_id:
                    self._stream = None
                    if stream.shown:  # else the stored message is shown whole when it comes
                        self._streamed[event.message_id] = "".join(stream.text)
                    took = time.monotonic() - stream.started
                    if stream.shown:
                        self.screen.line(f" [dim]({took:.1f} s)[/dim]")
                    else:
                        self.screen.clear_transient()
            case "error":
                self.busy.pop(event.agent, None)
                self.close_stream()
                self.screen.line(f"[red]⚠ {escape(event.agent)}: {escape(event.error or 'error')}[/red]")
            case _:
                pass

    # -- stored messages ------------------------------------------------------------------

    def _message(self, message: Message, *, live: bool = True) -> None:
        """``live``: it came as it happened, from this process (a person's own message was
        typed here: not echoed; an answer's time is known); else read from storage later."""
        if message.role == "tool":
            self._result(message)
            return
        content = message.content or ""
        if message.role == "system" or TURN_LIMIT_MARKER in content or BUDGET_MARKER in content:
            self.screen.line(f"[bold red]⚠ {escape(message.sender)}: {escape(content, lines=True)}[/bold red]")
            return
        if message.role == "user":
            if not live or message.sender.lower() not in ("human", "you", "user"):
                self.screen.line(f"[bold green]{escape(message.sender)}[/bold green]: {escape(content, lines=True)}")
            return
        streamed = self._streamed.pop(message.message_id, None)
        if content and streamed is None:
            took = f" [dim]({time.monotonic() - self._last_step:.1f} s)[/dim]" if live else ""
            self.screen.line(f"[bold cyan]{escape(message.sender)}[/bold cyan]: {escape(content, lines=True)}{took}")
        elif content and streamed is not None and " ".join(content.split()) != " ".join(streamed.split()):
            self.screen.line(f"[dim]  sent as: {escape(content, lines=True)}[/dim]")  # mentions, world tags
        for call in message.tool_calls or ():
            if output.is_approval_request(message, call):
                continue  # the session asks it at the prompt (or announces it, behind a prompt)
            self._call(message.sender, call.id, call.function.name, call.function.arguments)

    def _call(self, agent: str, call_id: str, name: str, arguments: str) -> None:
        """One line for a tool call: its arguments with secrets masked, as every approval view
        shows them (redaction is imported with the first call, off the way to the prompt)."""
        from agentworld.redaction import redact_json_text

        number = len(self._numbers) + 1
        self._numbers[call_id] = (number, name)
        masked = redact_json_text(arguments)
        shown = _cut(" ".join(masked.split()), self.width - len(agent) - len(name) - 14)
        self.screen.line(f"[yellow]  [{number}] {escape(agent)} → {escape(name)} {escape(shown)}[/yellow]")

    def _result(self, message: Message) -> None:
        call_id = message.tool_call_id or ""
        answer = output.approval_answer(call_id, message.content)
        if answer is not None:
            self.screen.line(f"[dim]  ↳ approval: {escape(answer)}[/dim]")
            return
        number, name = self._numbers.get(call_id, (0, "tool"))
        content = message.content or ""
        if number:
            self.results[number] = (name, content)
        label = f"[{number}] " if number else ""
        summary = output.result_summary(content, limit=max(20, self.width - len(name) - 12))
        more = f" [dim](/show {number})[/dim]" if number and len(content) > len(summary) else ""
        self.screen.line(f"[dim]  ↳ {label}{escape(name)}: {escape(summary)}[/dim]{more}")

    def _system(self, event: SystemEvent) -> None:
        # An agent's failure comes with a system message in the chat: that one is shown.
        if event.level == "error" and "agent" not in event.context:
            self.close_stream()
            self.screen.error(event.text)

    def show(self, number: int) -> bool:
        """Print tool result ``number`` in full (pretty JSON when it is JSON)."""
        found = self.results.get(number)
        if found is None:
            return False
        name, content = found
        self.screen.line(f"[bold][{number}] {escape(name)}[/bold]")
        self.screen.console.print(escape_controls(_pretty(content), keep="\n\t"), markup=False)
        return True


def _cut(text: str, limit: int) -> str:
    limit = max(limit, 20)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pretty(content: str) -> str:
    import json

    try:
        value: Any = json.loads(content)
    except ValueError:
        return content
    return json.dumps(value, ensure_ascii=False, indent=2)
