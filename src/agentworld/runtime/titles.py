"""Chat titles (SPEC O5): asked of the model once a chat's first exchange is done.

When no model can be asked (an offline scripted agent, an unreachable
endpoint, an empty answer) the title falls back to the first words of the
first human message, so every chat gets a readable name.

Either way a title is made of outside text (a person's message, a model's answer) and is then
shown in every terminal that lists the chats, so it is made plain text: escape sequences
dropped, other control characters made blanks, blanks folded (``plain_title_text``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from agentworld.approval.shell_view import replace_controls
from agentworld.models import Agent, Message
from agentworld.providers.base import LLMProvider, LLMRequest, PromptMessage
from agentworld.routing.mentions import is_human_sender
from agentworld.storage.sql import SQLStorage

logger = logging.getLogger("agentworld.runtime")

TITLE_INSTRUCTION = (
    "You name conversations. Reply with a title of at most six words for the conversation "
    "below, with no quotes and no punctuation at the end."
)
_MENTION = re.compile(r"@[\w-]+[,:]?\s*")
# A terminal escape sequence, dropped whole so its parameters leave no debris in a title:
# CSI (``ESC [ ... final``), OSC (``ESC ] ...`` ended by BEL or ``ESC \``: a window title, a
# clipboard write), or ESC and one character.
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -~]?"
)


def plain_title_text(text: str) -> str:
    """``text`` as a title may hold it: escape sequences dropped, every other character
    ``escape_controls`` would escape made a blank, blanks folded into single spaces."""
    return " ".join(replace_controls(_ESCAPE_SEQUENCE.sub("", text)).split())


def first_exchange(transcript: list[Message]) -> tuple[Message, Message] | None:
    """The first human message and the first agent answer after it, if both exist."""
    question = next(
        (m for m in transcript if m.role == "user" and is_human_sender(m.sender) and m.content),
        None,
    )
    if question is None:
        return None
    answer = next(
        (
            m
            for m in transcript
            if m.role == "assistant"
            and m.content
            and not m.tool_calls
            and m.created_at >= question.created_at
        ),
        None,
    )
    return (question, answer) if answer is not None else None


def fallback_title(question: str, *, words: int = 6, limit: int = 60) -> str:
    """The first words of the first human message, its mentions left out."""
    text = " ".join(_MENTION.sub("", plain_title_text(question)).split())
    title = " ".join(text.split()[:words])[:limit].strip()
    return title or "New chat"


def clean_title(raw: str) -> str:
    """The first line of a model's answer with its quotes and closing punctuation cut."""
    line = next((ln for ln in map(plain_title_text, raw.splitlines()) if ln), "")
    return line.strip("\"'`*# ").rstrip(".!?:;")[:80]


async def generate_title(
    provider: LLMProvider | None, model: str, question: str, answer: str
) -> str:
    if provider is None:
        return fallback_title(question)
    request = LLMRequest(
        model=model,
        messages=(
            PromptMessage(role="system", content=TITLE_INSTRUCTION),
            PromptMessage(role="user", content=f"User: {question}\n\nAssistant: {answer}"),
        ),
        max_tokens=24,
    )
    try:
        response = await provider.complete(request)
    except Exception as exc:
        logger.info("title generation failed, using the fallback: %s", exc)
        return fallback_title(question)
    return clean_title(response.content) or fallback_title(question)


class Titled:
    """The chat has its title (titles are given once, never taken back)."""

    __slots__ = ()


class NewTitle:
    """The title to record -- with the release of the chat's lease, in one transaction.
    (Plain classes: defining a dataclass compiles its methods on a fresh process's first turn.)"""

    __slots__ = ("title",)

    def __init__(self, title: str) -> None:
        self.title = title


Naming = Titled | NewTitle | None
"""What the title step found; None: no first exchange yet, nothing to name."""


async def name_chat(
    storage: SQLStorage,
    provider_for: Callable[[Agent], LLMProvider],
    world: str,
    chat_id: str,
) -> Naming:
    """The chat's title from its first exchange, unless it has one already. Run by the process
    that holds the chat's lease, so one process asks for it."""
    untitled = await storage.untitled_chat(world, chat_id)
    if untitled is None:
        return Titled()
    transcript, agents = untitled
    exchange = first_exchange(transcript)
    if exchange is None:
        return None
    question, answer = exchange
    provider: LLMProvider | None = None
    model = ""
    # Agent names match case-insensitively (SPEC R1); one deleted meanwhile names no model.
    agent = next((a for a in agents if a.name.lower() == answer.sender.lower()), None)
    if agent is not None and agent.provider != "scripted":
        provider, model = provider_for(agent), agent.model
    return NewTitle(await generate_title(provider, model, question.content or "", answer.content or ""))


class ChatTitles:
    """Which of its world's chats a runtime knows to have a title (titles are given once, never
    taken back), and the title step itself, run under the chat's lease as its runner releases
    it."""

    def __init__(
        self, storage: SQLStorage, provider_for: Callable[[Agent], LLMProvider], world: str
    ) -> None:
        self._storage = storage
        self._provider_for = provider_for
        self._world = world
        self._titled: set[str] = set()

    async def title(self, chat_id: str) -> str | None:
        """The title to record as the chat's lease is released after its first exchange, once
        (SPEC O5). (Should that write fail, the next process to run the chat names it.)"""
        if chat_id in self._titled:
            return None
        naming = await name_chat(self._storage, self._provider_for, self._world, chat_id)
        if naming is not None:  # titled, or about to be with the release
            self._titled.add(chat_id)
        return naming.title if isinstance(naming, NewTitle) else None
