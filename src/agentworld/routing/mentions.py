"""Mention routing (SPEC §2.2, R1-R4 and R6): who answers a message, and how replies are addressed.

Everything here is a pure string function so the rules can be tested exhaustively and reused by
the runtime, the CLI and the server without dragging in any I/O. Regexes are compiled once at
import time because these functions run for every agent on every message.

Vocabulary:

* A *mention* is ``@name`` where name is ASCII letters, digits, ``_`` and ``-``, compared
  case-insensitively. It must not be glued to a preceding word (``me@x.com``) nor continue into
  something that is not a name (``@x.com``, ``@a@b``, ``@José``).
* A *mention block* is a run of mentions separated only by whitespace and commas
  (``@a1 @a2``, ``@a1, @a2:``).
* A *paragraph-start* mention is in the block a line begins with (after its indentation); only
  those address agents (R1). The *leading* mentions are the block the whole text begins with.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

HUMAN_SENDERS = frozenset({"human", "user", "you"})
TURN_LIMIT_MARKER = "Turn limit reached"
BUDGET_MARKER = "Budget reached"
HAND_BACK_MARKERS = (TURN_LIMIT_MARKER, BUDGET_MARKER)
"""What an agent's notice handing the conversation back to the people says (its turn limit,
a chat's budget): nobody answers such a notice."""


def is_hand_back(content: str) -> bool:
    """Whether ``content`` holds a hand-back notice (``HAND_BACK_MARKERS``)."""
    return any(marker in content for marker in HAND_BACK_MARKERS)

_WORLD_SENDER = "world"
_SYSTEM_SENDER = "system"

_NAME = r"[A-Za-z0-9_-]+"
# The name must end at a real boundary: not followed by another word character (so "@José" is not
# "@jos"), by "@", or by ".word" (so "@x.com" is not a mention of "x"). A trailing "." / "," / ":"
# / "!" is punctuation of the sentence, not part of the name.
_END = r"(?![\w@-]|\.\w)"
_MENTION = rf"@({_NAME}){_END}"

_NAME_RE = re.compile(_NAME)
# Anywhere in the text, but not inside an e-mail address or a dotted/hyphenated word.
_ANY_MENTION_RE = re.compile(rf"(?<![\w.@-]){_MENTION}")
# A block of mentions separated only by whitespace and commas; used with .match() at a line/text
# start. Separators and names use disjoint characters, so matching stays linear.
_BLOCK_RE = re.compile(rf"@{_NAME}{_END}(?:[\s,]+@{_NAME}{_END})*")
# Tokenises a matched block: each mention with the separator that follows it.
_TOKEN_RE = re.compile(rf"@({_NAME})([\s,]*)")
# What is left between a removed block and the text it addressed ("@a1: do x" -> "do x").
_LEADING_SEP_RE = re.compile(r"[\s,:;]*")
_SPACE_RE = re.compile(r"\s*")
_WORLD_TAG_RE = re.compile(
    # No "\s*" after the TO list: "[^<]*" already takes trailing blanks, and two adjacent
    # whitespace-eaters would backtrack quadratically on an unclosed tag.
    r"<\s*world\s*>\s*(?:(STOP|DONE|PASS)\s*|TO\s*:([^<]*))<\s*/\s*world\s*>",
    re.IGNORECASE,
)
_RECIPIENT_SPLIT_RE = re.compile(r"[\s,]+")

WorldTagKind = Literal["STOP", "DONE", "PASS", "TO"]
_ENDING_KINDS: dict[str, WorldTagKind] = {"STOP": "STOP", "DONE": "DONE", "PASS": "PASS"}


@dataclass(frozen=True)
class WorldTag:
    """A ``<world>...</world>`` control tag an agent put in its reply (R6).

    STOP/DONE/PASS end the conversation (no one is addressed); TO re-addresses the reply to
    ``recipients`` (names as written, without ``@``). A TO tag with no recipients changes nothing.
    """

    kind: WorldTagKind
    recipients: tuple[str, ...] = ()


def _norm(name: str) -> str:
    """Key used to compare sender and agent names: ignores case and surrounding whitespace."""
    return name.strip().casefold()


def _dedupe(names: Iterable[str]) -> list[str]:
    """Keep the first occurrence of each name; order matters to callers that show or reuse it."""
    return list(dict.fromkeys(names))


def _block_names(text: str) -> list[str]:
    """Lower-cased names of the mention block ``text`` starts with (no leading whitespace)."""
    m = _BLOCK_RE.match(text)
    return [t.group(1).lower() for t in _TOKEN_RE.finditer(m.group())] if m else []


def is_human_sender(sender: str) -> bool:
    """True for the names a human uses (R2); humans get broadcast and no auto-mention."""
    return _norm(sender) in HUMAN_SENDERS


def extract_paragraph_mentions(text: str) -> list[str]:
    """Names mentioned at a paragraph start (R1), lower-cased, first-seen order, no duplicates.

    Only a line's opening mention block counts: an aside like "I think @a1 ..." must not pull
    a1 into the conversation, while "@a1, @a2: do x" deliberately addresses both.
    """
    return _dedupe(name for line in text.splitlines() for name in _block_names(line.lstrip()))


def extract_leading_mentions(text: str) -> list[str]:
    """Names in the mention block the whole (stripped) text starts with; the block may span lines
    (``"@a\\n@b\\n\\nbody"``), which is exactly the shape a TO tag produces."""
    return _dedupe(_block_names(text.lstrip()))


def should_agent_respond(
    agent_name: str, *, sender: str, content: str, main_agent: str | None = None
) -> bool:
    """Decide whether ``agent_name`` answers a message (R2, R4).

    Order matters: an agent never answers itself and nobody answers a turn-limit notice, whoever
    sent it, otherwise two agents could keep a loop alive through those messages.
    """
    me = _norm(agent_name)
    who = _norm(sender)
    if who == me or is_hand_back(content):
        return False
    if who == _SYSTEM_SENDER:
        return False
    if who == _WORLD_SENDER:
        return True
    addressed = extract_paragraph_mentions(content)
    if who in HUMAN_SENDERS and not addressed:
        if _ANY_MENTION_RE.search(content):
            return False  # the human only talked *about* someone: answering would be noise
        if main_agent is not None and main_agent.strip():
            return me == _norm(main_agent)
        return True
    return me in addressed


def _skip(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Offset just past the (possibly empty) run of ``pattern`` at ``pos``."""
    m = pattern.match(text, pos)
    return m.end() if m else pos


def _drop_leading(text: str, drop: Callable[[str], bool]) -> str:
    """Remove the mentions for which ``drop(name)`` holds from the block ``text`` starts with.

    Returns ``text`` untouched when nothing is dropped. When the whole block goes, the separators
    that tied it to the sentence go too, and the check repeats ("@a1: @a1 hi" -> "hi").
    """
    pos = _skip(_SPACE_RE, text, 0)
    dropped_all = False
    # Work on offsets, not slices, so a long run like "@me: @me: ..." stays linear.
    while (m := _BLOCK_RE.match(text, pos)) is not None:
        tokens = list(_TOKEN_RE.finditer(text, m.start(), m.end()))
        kept = [t for t in tokens if not drop(t.group(1).lower())]
        if len(kept) == len(tokens):
            break
        if kept:
            # The last kept mention takes no separator: whatever followed the block follows it.
            head = "".join(t.group(0) for t in kept[:-1])
            return f"{head}@{kept[-1].group(1)}{text[m.end() :]}"
        pos = _skip(_LEADING_SEP_RE, text, m.end())
        dropped_all = True
    return text[pos:] if dropped_all else text


def remove_self_mentions(reply: str, agent_name: str) -> str:
    """Drop the agent's own name from the reply's leading mentions (R3), keeping the others.

    Models often echo "@me" back; published as is, the reply would look addressed to its author
    and would suppress the auto-mention that routes it onwards.
    """
    me = _norm(agent_name)
    if not me:
        return reply
    return _drop_leading(reply, lambda name: name == me)


def add_auto_mention(reply: str, *, sender: str, agent_name: str) -> str:
    """Prefix ``@sender`` to an agent-to-agent reply that addresses nobody (R3).

    Without it an agent's answer to another agent would reach no one. A reply that already starts
    any paragraph with a mention of someone else is a deliberate hand-off and is left alone, which
    also makes this idempotent. Humans, ``world`` and ``system`` are never auto-mentioned, nor is
    a sender whose name cannot be written as a mention.
    """
    who = sender.strip()
    me = _norm(agent_name)
    if not reply.strip() or not _NAME_RE.fullmatch(who):
        return reply
    key = who.lower()
    if key in HUMAN_SENDERS or key in (_WORLD_SENDER, _SYSTEM_SENDER) or key == me:
        return reply
    if any(name != me for name in extract_paragraph_mentions(reply)):
        return reply
    return f"@{who} {reply.strip()}"


def _tag_from_match(m: re.Match[str]) -> WorldTag:
    word = m.group(1)
    if word is not None:
        return WorldTag(_ENDING_KINDS[word.upper()])
    raw = (part.lstrip("@") for part in _RECIPIENT_SPLIT_RE.split(m.group(2)))
    seen: dict[str, str] = {}
    for name in raw:
        if name and name.casefold() not in seen:
            seen[name.casefold()] = name
    return WorldTag("TO", tuple(seen.values()))


def find_world_tag(reply: str) -> WorldTag | None:
    """The first ``<world>...</world>`` tag in the reply, or None. Tag words ignore case and
    whitespace; TO recipients are split on commas/whitespace, a leading ``@`` is tolerated."""
    m = _WORLD_TAG_RE.search(reply)
    return _tag_from_match(m) if m else None


def _strip_paragraph_mentions(text: str) -> str:
    """Remove every paragraph-start mention block; lines that held only mentions disappear."""
    out: list[str] = []
    for line in text.splitlines():
        body = line.lstrip()
        rest = _drop_leading(body, lambda _name: True)
        if rest == body:
            out.append(line)
        elif rest.strip():
            out.append(line[: len(line) - len(body)] + rest)
    return "\n".join(out)


def apply_world_tags(reply: str) -> tuple[str, WorldTag | None]:
    """Apply the first world tag of the reply (R6) and strip all tag text.

    STOP/DONE/PASS remove every paragraph-start mention, so the published reply addresses no one
    and the conversation ends. ``TO: a, b`` replaces them with ``@a`` and ``@b``, one per line,
    then a blank line and the body. A TO tag without recipients only has its text removed.
    """
    m = _WORLD_TAG_RE.search(reply)
    if m is None:
        return reply, None
    tag = _tag_from_match(m)
    text = _WORLD_TAG_RE.sub("", reply).strip()
    if tag.kind == "TO" and not tag.recipients:
        return text, tag
    body = _strip_paragraph_mentions(text).strip()
    if tag.kind != "TO":
        return body, tag
    heads = "\n".join(f"@{name}" for name in tag.recipients)
    return (f"{heads}\n\n{body}" if body else heads), tag


def finalize_reply(reply: str, *, agent_name: str, sender: str) -> str:
    """Turn an agent's raw text answer into the message it publishes (R3 + R6).

    World tags win over auto-mention: after STOP/DONE/PASS nobody must be addressed, after TO
    exactly its recipients. The final self-mention pass guarantees the published reply never
    opens with its author, even when an auto-mention was glued in front of a stray ", @me".
    """
    text, tag = apply_world_tags(reply)
    text = remove_self_mentions(text, agent_name)
    if tag is None or (tag.kind == "TO" and not tag.recipients):
        text = add_auto_mention(text, sender=sender, agent_name=agent_name)
    return remove_self_mentions(text, agent_name)
