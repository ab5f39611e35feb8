"""The approval question of ``agentworld talk`` as a small state machine (SPEC C4), apart from
the terminal: keys in (with the time they came), an answer out, and the line to draw.

No key answers a question the person has not had time to read. The question arms only once it
has been on the screen for ``ARM_SECONDS`` with no key pressed meanwhile: keys typed for the
message being written (type-ahead, or typing that goes on as the question appears) never count,
however long the typing lasts. What they wrote is kept (``kept``) for the next message instead.
Once armed, a letter answers, or the arrows and Tab move a highlight (deny at first) that Enter
answers. ALWAYS is a permanent world-wide rule, so it takes a second step: the question "approve
ALWAYS …? type y" arms afresh, and any key but ``y`` goes back to the first question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Choice = Literal["deny", "once", "session", "always", "later"]
"""An answer to the question: deny, approve with a scope, or leave the request pending."""
CHOICES: tuple[Choice, ...] = ("deny", "once", "session", "always", "later")
"""In the order they are shown (and the highlight moves)."""
LETTERS: dict[str, Choice] = {choice[0]: choice for choice in CHOICES}
ARM_SECONDS = 0.7
"""How long the question is on the screen, with no key pressed, before a key answers it."""

Key = str
"""A key as the question reads it: one printable character, or one of ``enter``, ``backspace``,
``left``, ``right``, ``up``, ``down``, ``tab``, ``s-tab``; anything else is ``other`` (a key
that is not typing: it neither answers nor holds the question back)."""
_BACK = ("left", "up", "s-tab")
_ON = ("right", "down", "tab")

Fragments = list[tuple[str, str]]
"""The line to draw: (style, text) pairs, as prompt_toolkit takes them."""


@dataclass
class ApprovalQuestion:
    """One approval request being asked. ``always_means`` says what an ALWAYS answer would
    allow (shown in the second step)."""

    always_means: str
    arm_seconds: float = ARM_SECONDS
    highlight: int = 0
    confirming: bool = False
    """Whether the second step of ALWAYS is being asked."""
    kept: str = ""
    """What was typed before the question first armed, for the next message."""
    _shown_at: float | None = None
    _quiet_since: float = 0.0
    _ever_armed: bool = False

    def shown(self, now: float) -> None:
        """The question is on the screen (the first call counts)."""
        if self._shown_at is None:
            self._shown_at = now
            self._quiet_since = max(self._quiet_since, now)

    def arms_at(self) -> float | None:
        """When a key will answer, if no key comes before; None while not yet shown."""
        if self._shown_at is None:
            return None
        return max(self._shown_at, self._quiet_since) + self.arm_seconds

    def armed(self, now: float) -> bool:
        at = self.arms_at()
        return at is not None and now >= at

    def kept_text(self) -> str:
        """The type-ahead kept, as the next message's starting text."""
        return self.kept.strip("\n")

    def press(self, key: Key, now: float) -> Choice | None:
        """Take one key; the answer it gives, or None while the question goes on."""
        if not self.armed(now):
            if key != "other":  # typing goes on: the question waits for it to stop
                self._quiet_since = now
            if not self._ever_armed:
                self._keep(key)
            return None
        self._ever_armed = True
        if self.confirming:
            if key in ("y", "Y"):
                return "always"
            self._ask_again(now, confirming=False)
            return None
        choice: Choice | None = LETTERS.get(key.lower()) if len(key) == 1 else None
        if key == "enter":
            choice = CHOICES[self.highlight]
        elif key in _BACK or key in _ON:
            step = -1 if key in _BACK else 1
            self.highlight = (self.highlight + step) % len(CHOICES)
        if choice == "always":
            self._ask_again(now, confirming=True)
            return None
        return choice

    def paste(self, text: str, now: float) -> None:
        """Pasted text never answers; before the question first arms it is kept, as typing."""
        if not self.armed(now):
            self._quiet_since = now
            if not self._ever_armed:
                self.kept += text

    def _ask_again(self, now: float, *, confirming: bool) -> None:
        """A new question on the screen: it arms afresh, with the highlight back on deny."""
        self.confirming = confirming
        self.highlight = 0
        self._shown_at = self._quiet_since = now

    def _keep(self, key: Key) -> None:
        if key == "enter":
            self.kept += "\n"
        elif key == "backspace":
            self.kept = self.kept[:-1]
        elif len(key) == 1 and key.isprintable():
            self.kept += key

    def line(self, now: float) -> Fragments:
        """The question as it reads now: while not armed, that keys are ignored."""
        armed = self.armed(now)
        if self.confirming:
            text = (f"approve ALWAYS in this world for {self.always_means}? "
                    "type y to confirm (any other key: back)")  # fmt: skip
            return [("bold", text), *_wait_or_answer(armed, "")]
        fragments: Fragments = []
        for index, choice in enumerate(CHOICES):
            style = "reverse" if index == self.highlight and armed else ""
            fragments += [("", " ")] if index else []
            fragments += [(style, f"[{choice[0]}]{choice[1:]}")]
        return fragments + _wait_or_answer(armed, f"Enter: {CHOICES[self.highlight]}")


def _wait_or_answer(armed: bool, hint: str) -> Fragments:
    if not armed:
        return [("italic", "  (keys ignored for a moment: read the command) ")]
    return [("", f"  ({hint}) › " if hint else " › ")]
