"""A chat's title is plain text, whoever wrote what it is made of (SPEC O5). Before, the
fallback title kept the ESC and BEL of the first message (``@a \\e]0;PWNED\\a\\e[31mhello``)
and a model's title was stored as it answered, so ``chat list`` retitled the terminal of
whoever listed the chats."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.runtime.titles import clean_title, fallback_title, plain_title_text

CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))] + ["\u202e", "\u200b", "\u2066"]


def assert_plain(title: str) -> None:
    assert not [c for c in title if c in CONTROLS], repr(title)
    assert title == " ".join(title.split()), repr(title)


@pytest.mark.parametrize(
    ("question", "title"),
    [
        ("@a \x1b]0;PWNED\x07\x1b[31mhello", "hello"),
        ("@a \x1b]52;c;cm0gLXJmIH4K\x1b\\copy this", "copy this"),
        ("bell\x07ring \x1b[1A\x1b[2Kup", "bell ring up"),
        ("tab\tand\x0bvt\x0cff\x1ddel\x7fx", "tab and vt ff del x"),
        ("c1\x9b31m csi \x85nel", "c1 31m csi nel"),
        ("\u202eevil\u202c \u200bzero \u2066iso\u2069", "evil zero iso"),
        ("\x1b[31m@a hi", "hi"),
        ("\x1b\x07\x1b[0m", "New chat"),
    ],
)
def test_the_fallback_title_drops_escape_sequences_and_control_characters(
    question: str, title: str
) -> None:
    made = fallback_title(question)
    assert made == title
    assert_plain(made)


@pytest.mark.parametrize(
    ("answer", "title"),
    [
        ('"\x1b]0;PWNED\x07Shipping the release"', "Shipping the release"),
        ("\x1b[2J\n\x1b[31mRed\x1b[0m alert.", "Red alert"),
        ("\x1b[8m\u202e\n  Plain words  ", "Plain words"),
    ],
)
def test_a_model_title_drops_escape_sequences_and_control_characters(
    answer: str, title: str
) -> None:
    made = clean_title(answer)
    assert made == title
    assert_plain(made)


def test_plain_title_text_keeps_ordinary_text() -> None:
    assert plain_title_text("Café — résumé 東京 🚀 [x] \\e") == "Café — résumé 東京 🚀 [x] \\e"


async def test_a_chat_named_by_a_model_gets_a_plain_title(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1")
    script.title = "\x1b]0;PWNED\x07\x1b[31mRelease \x9b2J plan\x07"
    await aw.send("w", "@a1 how do we ship?")
    (chat,) = await aw.list_chats("w")
    assert chat.name == "Release 2J plan"


async def test_a_chat_named_from_its_question_gets_a_plain_title(
    aw: AgentWorld, make_world: Any, script: Any
) -> None:
    await make_world("a1")
    script.title = None  # the title request fails: the question names the chat
    await aw.send("w", "@a1 \x1b]0;PWNED\x07\x1b[31mhello\x07there")
    (chat,) = await aw.list_chats("w")
    assert chat.name == "hello there"
