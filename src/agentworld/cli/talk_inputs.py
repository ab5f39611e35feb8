"""The keys of ``agentworld talk``'s answer and edit prompts, and the person's editor.

- An agent's question (``talk_answer``): until it arms, every key and paste is taken by the
  question (kept for the next message, answering nothing: SPEC C4); once armed, the line is
  edited as any prompt line and Enter sends it, unless ``resolve`` refuses it — then the hint
  shows under the line and the question stays.
- An edit of a call (``talk_edit``): the text starts as the call's, Enter accepts it, Esc-Enter
  starts a new line; Ctrl-C or Ctrl-D cancel the edit.
- ``edit_in_editor`` writes the arguments to a temporary file, runs ``$VISUAL``/``$EDITOR``
  on it in the terminal and reads it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.validation import ValidationError, Validator

from agentworld.cli.talk_answer import AskedQuestion, Refused
from agentworld.cli.talk_question import Key

if TYPE_CHECKING:
    from prompt_toolkit.key_binding.key_processor import KeyPress

NAMED_KEYS: dict[str, Key] = {
    Keys.Enter: "enter", Keys.ControlJ: "enter", Keys.Backspace: "backspace", Keys.Left: "left",
    Keys.Right: "right", Keys.Up: "up", Keys.Down: "down", Keys.Tab: "tab", Keys.BackTab: "s-tab",
}  # fmt: skip
"""The keys a question reads by name; bound one by one, since the prompt's own bindings for
them (Enter accepts a line, Tab completes) would otherwise win over ``<any>``."""


def key_name(key: KeyPress) -> Key:
    """A key as the questions read it (``talk_question.Key``)."""
    named = NAMED_KEYS.get(key.key)
    return named or (key.key if len(key.key) == 1 else "other")


def answer_keys(asked: Callable[[], AskedQuestion | None], *, after: Callable[[], None]) -> KeyBindings:
    """Keys go to the question ``asked()`` until it arms, and into the line after; Ctrl-C and
    Ctrl-D leave the question waiting, armed or not (nothing is answered). ``after`` each key
    taken early (which moves the moment it arms)."""
    keys = KeyBindings()
    keys.add("c-c", eager=True)(_leave)
    keys.add("c-d", eager=True)(_leave)

    @Condition
    def arming() -> bool:
        question = asked()
        return question is not None and not question.armed(time.monotonic())

    def early(event: KeyPressEvent) -> None:
        question = asked()
        if question is None:
            return
        key, now = event.key_sequence[-1], time.monotonic()
        if key.key == Keys.BracketedPaste:
            question.paste(key.data, now)
        else:
            question.early(key_name(key), now)  # armed meanwhile: the key is dropped, not typed
        after()

    for name in (*NAMED_KEYS, Keys.BracketedPaste, "<any>"):
        keys.add(name, eager=True, filter=arming)(early)
    return keys


def _leave(event: KeyPressEvent) -> None:
    event.app.exit(result=None)


class AnswerCheck(Validator):
    """Refuses, in place and with a hint, a line that is no allowed answer to the question."""

    def __init__(self, asked: Callable[[], AskedQuestion | None]) -> None:
        self.asked = asked

    def validate(self, document: Document) -> None:
        question = self.asked()
        if question is None:
            return
        found = question.resolve(document.text)
        if isinstance(found, Refused):
            raise ValidationError(message=found.hint, cursor_position=len(document.text))


def edit_keys() -> KeyBindings:
    keys = KeyBindings()

    @keys.add("escape", "enter")  # Alt-Enter arrives as the same two keys
    def _new_line(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    keys.add("c-c", eager=True)(_leave)
    keys.add("c-d", eager=True)(_leave)
    return keys


async def edit_in_editor(command: list[str], text: str, *, suffix: str = ".json") -> str | None:
    """``text`` as the person left it in their editor (``command`` + a temporary file), or None
    when the editor failed (it could not start, or exited with a non-zero status)."""
    return await asyncio.to_thread(_edit_in_editor, command, text, suffix)


def _edit_in_editor(command: list[str], text: str, suffix: str) -> str | None:
    handle, name = tempfile.mkstemp(prefix="agentworld-edit-", suffix=suffix)
    path = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        try:
            status = subprocess.run([*command, str(path)], check=False).returncode
        except OSError:
            return None
        return path.read_text(encoding="utf-8") if status == 0 else None
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
