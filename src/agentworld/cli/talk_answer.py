"""An agent's question (``ask_user``, SPEC F3) as ``agentworld talk`` asks it, apart from the
terminal: the lines that show it, the prompt's text, and what a typed line answers.

The person picks an option by its number or types an answer (when the agent allows free text)
and presses Enter. As with an approval (SPEC C4), nothing typed before the question was on the
screen and armed answers it (``Arming``): those keys are kept for the next message, and the
answer is a line typed after arming, ended with Enter. A line that is no allowed answer is
refused in place with a hint (``resolve``), and the question stays.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentworld.approval.shell_view import escape_controls
from agentworld.cli.talk_question import Arming, Fragments


@dataclass(frozen=True, slots=True)
class Picked:
    answer: str
    """The answer sent: the option's own text when an option was picked."""


@dataclass(frozen=True, slots=True)
class Refused:
    hint: str


@dataclass(kw_only=True)
class AskedQuestion(Arming):
    """One agent's question being asked."""

    agent: str
    question: str
    options: tuple[str, ...] = ()
    allow_free_text: bool = True

    @property
    def free(self) -> bool:
        """Whether an answer outside the options is taken (always, when there are none)."""
        return self.allow_free_text or not self.options

    def lines(self) -> list[str]:
        """The question and its numbered options, as plain text (control characters escaped)."""
        first, *more = escape_controls(self.question, keep="\n\t").split("\n")
        shown = [f"? {escape_controls(self.agent)} asks: {first}", *(f"  {line}" for line in more)]
        shown += [f"  {number}. {escape_controls(option)}" for number, option in enumerate(self.options, 1)]
        return shown

    def how(self) -> str:
        """How to answer, in words."""
        if not self.options:
            return "type your answer and press Enter"
        pick = f"type 1–{len(self.options)}" if len(self.options) > 1 else "type 1"
        return f"{pick} and press Enter" + (", or type your own answer" if self.free else "")

    def resolve(self, typed: str) -> Picked | Refused:
        """What the line ``typed`` answers, or why it is refused (with how to answer)."""
        text = typed.strip()
        if not text:
            return Refused(f"an empty answer: {self.how()}")
        if self.options and text.isdigit():
            number = int(text)
            if 1 <= number <= len(self.options):
                return Picked(self.options[number - 1])
            return Refused(f"there is no option {number}: {self.how()}")
        named = [option for option in self.options if option.strip().casefold() == text.casefold()]
        if named:
            return Picked(named[0])
        if self.free:
            return Picked(text)
        return Refused(f"answer with one of the options: {self.how()}")

    def prompt(self, now: float) -> Fragments:
        """The prompt's text as it reads now: while not armed, that keys are ignored."""
        if not self.armed(now):
            return [("italic", "(keys ignored for a moment: read the question) ")]
        return [("bold", "answer"), ("", f" ({self.how()}) › ")]
