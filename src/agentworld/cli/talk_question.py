"""The approval question of ``agentworld talk`` as a small state machine (SPEC C4), apart from
the terminal: keys in (with the time they came), an answer out, and the line to draw.

No key answers a question the person has not had time to read. The question arms only once it
has been on the screen for ``ARM_SECONDS`` with no key pressed meanwhile: keys typed for the
message being written (type-ahead, or typing that goes on as the question appears) never count,
however long the typing lasts. What they wrote is kept (``kept``) for the next message instead.
Once armed, a letter answers, or the arrows and Tab move a highlight (the first choice at first:
deny) that Enter answers. ALWAYS is a permanent world-wide rule, so it takes a second step: the
question "approve ALWAYS …? type y" arms afresh, and any key but ``y`` goes back to the first
question. The same machine asks the scope of an edited call (``SCOPE_CHOICES``: cancel first)
and whether to remove messages (``CONFIRM_CHOICES``: no first).
The arming itself (``Arming``) also guards the answer to an agent's question (``talk_answer``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Choice = Literal["deny", "once", "session", "always", "edit", "later", "cancel", "no", "yes"]
"""An answer to the question: deny, approve with a scope, edit the call first, leave the
request pending, (asking the scope of an edited call) go back to the first question, or (asking
whether to remove messages) no or yes."""
CHOICES: tuple[Choice, ...] = ("deny", "once", "session", "always", "edit", "later")
"""In the order they are shown (and the highlight moves)."""
SCOPE_CHOICES: tuple[Choice, ...] = ("cancel", "once", "session", "always")
"""The question asked once a call was edited: with which scope it runs, or back."""
CONFIRM_CHOICES: tuple[Choice, ...] = ("no", "yes")
"""The question asked before messages are removed (``/undo``, ``/edit``): Enter alone says no."""
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


@dataclass(kw_only=True)
class Arming:
    """When a question on the screen may be answered: ``arm_seconds`` after it was shown and
    after the last key, and what was typed before it first armed (``kept``, for the next
    message)."""

    arm_seconds: float = ARM_SECONDS
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

    def early(self, key: Key, now: float) -> bool:
        """Take ``key`` if the question is not armed yet (it then answers nothing: typing
        holds the question back, and before the first arming is kept); whether it was early."""
        if self.armed(now):
            self._ever_armed = True
            return False
        if key != "other":  # typing goes on: the question waits for it to stop
            self._quiet_since = now
        if not self._ever_armed:
            self._keep(key)
        return True

    def paste(self, text: str, now: float) -> None:
        """Pasted text never answers; before the question first arms it is kept, as typing."""
        if not self.armed(now):
            self._quiet_since = now
            if not self._ever_armed:
                self.kept += text

    def rearm(self, now: float) -> None:
        """A new question in the same place: it arms afresh, from ``now``."""
        self._shown_at = self._quiet_since = now

    def _keep(self, key: Key) -> None:
        if key == "enter":
            self.kept += "\n"
        elif key == "backspace":
            self.kept = self.kept[:-1]
        elif len(key) == 1 and key.isprintable():
            self.kept += key


@dataclass(kw_only=True)
class ApprovalQuestion(Arming):
    """One approval request being asked. ``always_means`` says what an ALWAYS answer would
    allow (shown in the second step); ``choices`` are the answers offered (without ``edit``
    when the call cannot be edited here; ``SCOPE_CHOICES`` for an edited call)."""

    always_means: str = ""
    choices: tuple[Choice, ...] = CHOICES
    title: str = ""
    """Said before the choices (what is being asked, when it is not the request above)."""
    reading: str = "the command"
    """What the person is given the moment to read (said while the question is not armed)."""
    highlight: int = 0
    confirming: bool = False
    """Whether the second step of ALWAYS is being asked."""

    def press(self, key: Key, now: float) -> Choice | None:
        """Take one key; the answer it gives, or None while the question goes on."""
        if self.early(key, now):
            return None
        if self.confirming:
            if key in ("y", "Y"):
                return "always"
            self._ask_again(now, confirming=False)
            return None
        letters = {choice[0]: choice for choice in self.choices}
        choice: Choice | None = letters.get(key.lower()) if len(key) == 1 else None
        if key == "enter":
            choice = self.choices[self.highlight]
        elif key in _BACK or key in _ON:
            step = -1 if key in _BACK else 1
            self.highlight = (self.highlight + step) % len(self.choices)
        if choice == "always":
            self._ask_again(now, confirming=True)
            return None
        return choice

    def _ask_again(self, now: float, *, confirming: bool) -> None:
        """A new question on the screen: it arms afresh, with the highlight back on the first
        choice."""
        self.confirming = confirming
        self.highlight = 0
        self.rearm(now)

    def line(self, now: float) -> Fragments:
        """The question as it reads now: while not armed, that keys are ignored."""
        armed = self.armed(now)
        if self.confirming:
            text = (f"approve ALWAYS in this world for {self.always_means}? "
                    "type y to confirm (any other key: back)")  # fmt: skip
            return [("bold", text), *_wait_or_answer(armed, "", self.reading)]
        fragments: Fragments = [("bold", f"{self.title} ")] if self.title else []
        for index, choice in enumerate(self.choices):
            style = "reverse" if index == self.highlight and armed else ""
            fragments += [("", " ")] if index else []
            fragments += [(style, f"[{choice[0]}]{choice[1:]}")]
        return fragments + _wait_or_answer(armed, f"Enter: {self.choices[self.highlight]}", self.reading)


def _wait_or_answer(armed: bool, hint: str, reading: str) -> Fragments:
    if not armed:
        return [("italic", f"  (keys ignored for a moment: read {reading}) ")]
    return [("", f"  ({hint}) › " if hint else " › ")]
