"""Provider deltas in, one ``LLMResponse`` out: the stream assembler every provider shares.

A small synchronous state machine with no I/O, in the manner of pydantic-ai's
``_parts_manager.py``. Each provider's adapter (``openai_stream``,
``anthropic_stream``, ``google_convert``) only translates its wire deltas into
calls here, so what a response is made of is decided once, in one vocabulary:

* a **part** is one piece of the answer: text, a tool call, or an *ignored* part
  (a block kind we do not use, such as Anthropic's thinking);
* a **key** is the provider's handle for a part (Anthropic's block index,
  OpenAI's tool-call index, a Gemini call's position); parts are ordered by key,
  not by arrival, and providers whose text has no index put it at
  :data:`TEXT_KEY`, ahead of every indexed part;
* ``start_*`` opens a fresh part at a key, replacing whatever was there;
  ``add_*`` appends a fragment to the part at a key, opening one of its kind if
  none is there yet and dropping the fragment if a part of another kind is.

The two places where providers differ in what they promise are settings rather
than code paths: how finished argument text is normalised (``arguments``) and
what id a call the provider left without one gets (``fallback_id``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

from agentworld import strict_json
from agentworld.models import LLMResponse, ToolCall, Usage

TEXT_KEY = -1
"""The key of the running text of providers whose text has no index (OpenAI, Gemini)."""

ArgumentsMode = Literal["verbatim", "json"]
"""How a call's joined argument text is finished (see :func:`finish_arguments`)."""

FallbackId = Callable[[int, str, str], str]
"""Makes an id for a call that arrived without one, from its key, name and finished arguments."""


def arguments_text(value: Any) -> str:
    """A tool's arguments object as the JSON text a ``ToolCall`` carries.

    Every provider that hands us objects (Anthropic's ``input``, Gemini's ``args``)
    serialises them here, so the same call reads the same from either mode.
    """
    return json.dumps(value, ensure_ascii=False)


def finish_arguments(text: str, mode: ArgumentsMode) -> str:
    """A call's joined argument fragments as its final ``arguments`` text.

    ``"verbatim"`` keeps the text as sent and fills in ``"{}"`` only when nothing
    came, as OpenAI's non-streamed path does. ``"json"`` re-serialises valid JSON
    with :func:`arguments_text`, so a streamed call matches the plain answer built
    from the parsed object (Anthropic); blank text is ``"{}"``, and text that does
    not parse is kept for the runtime to report to the model.
    """
    if mode == "verbatim":
        return text or "{}"
    if not text.strip():
        return "{}"
    try:
        return arguments_text(strict_json.loads(text))
    except (ValueError, RecursionError):
        return text


@dataclass
class _TextPart:
    kind: Literal["text"] = "text"
    fragments: list[str] = field(default_factory=list)


@dataclass
class _ToolCallPart:
    kind: Literal["tool_call"] = "tool_call"
    id: str = ""
    name: str = ""
    fragments: list[str] = field(default_factory=list)


@dataclass
class _IgnoredPart:
    """A part of a kind we do not use: its fragments are dropped, so new kinds cannot break us."""

    kind: Literal["ignored"] = "ignored"


_Part = _TextPart | _ToolCallPart | _IgnoredPart


@dataclass
class PartsAssembler:
    """The parts of one response as they stream in; :meth:`response` reads them as one answer.

    ``usage`` and ``model`` are plain fields: providers report them at different
    moments and with different rules, which their adapters keep.
    """

    arguments: ArgumentsMode = "verbatim"
    fallback_id: FallbackId | None = None
    """Names calls that came without an id; without it such a call keeps the empty id."""
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    _parts: dict[int, _Part] = field(default_factory=dict, init=False, repr=False)

    # --- opening parts -------------------------------------------------------------------------

    def start_text(self, key: int) -> None:
        """Open an empty text part at ``key``."""
        self._parts[key] = _TextPart()

    def start_tool_call(self, key: int, *, id: str = "", name: str = "") -> None:
        """Open a tool call at ``key`` whose arguments are still to come."""
        self._parts[key] = _ToolCallPart(id=id, name=name)

    def start_ignored(self, key: int) -> None:
        """Mark ``key`` as a part we do not use, so its fragments are dropped."""
        self._parts[key] = _IgnoredPart()

    # --- adding fragments ----------------------------------------------------------------------

    def add_text(self, key: int, text: str) -> str:
        """Append ``text`` to the text part at ``key``; return what was kept.

        The return value is what a stream should echo: ``""`` when the part at
        ``key`` is not text (a stray delta), so nothing that is not answer text
        reaches the user.
        """
        part = self._parts.setdefault(key, _TextPart())
        if not isinstance(part, _TextPart):
            return ""
        part.fragments.append(text)
        return text

    def add_tool_call(
        self,
        key: int,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
    ) -> None:
        """Add what one fragment says about the tool call at ``key``.

        Any fragment may carry the id, and a later one replaces an earlier one;
        the first name stands, because some servers repeat (or vary) it on later
        fragments; argument text is appended, and only parses once joined.
        """
        part = self._parts.setdefault(key, _ToolCallPart())
        if not isinstance(part, _ToolCallPart):
            return
        if id:
            part.id = id
        if name and not part.name:
            part.name = name
        if arguments:
            part.fragments.append(arguments)

    def set_usage(
        self, *, input_tokens: int | None = None, output_tokens: int | None = None
    ) -> None:
        """Record token counts; a count left out keeps its last value.

        Providers report the two counts in different events, and later reports are
        running totals, so each replaces rather than adds.
        """
        self.usage = Usage(
            input_tokens=self.usage.input_tokens if input_tokens is None else input_tokens,
            output_tokens=self.usage.output_tokens if output_tokens is None else output_tokens,
        )

    # --- the answer ----------------------------------------------------------------------------

    def response(self) -> LLMResponse:
        """The parts so far as one response: text joined, calls in key order."""
        texts: list[str] = []
        calls: list[ToolCall] = []
        for key, part in sorted(self._parts.items()):
            match part:
                case _TextPart():
                    texts.extend(part.fragments)
                case _ToolCallPart():
                    calls.append(self._tool_call(key, part))
                case _IgnoredPart():
                    pass
                case _:
                    assert_never(part)
        return LLMResponse.of("".join(texts), calls, usage=self.usage, model=self.model)

    def _tool_call(self, key: int, part: _ToolCallPart) -> ToolCall:
        arguments = finish_arguments("".join(part.fragments), self.arguments)
        call_id = part.id
        if not call_id and self.fallback_id is not None:
            call_id = self.fallback_id(key, part.name, arguments)
        return ToolCall.of(call_id, part.name, arguments)
