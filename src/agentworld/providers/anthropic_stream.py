"""Read an Anthropic Messages stream into one ``LLMResponse``.

A thin translation of each SSE event's JSON payload (the wire shape, e.g.
``{"type": "content_block_delta", "index": 1, "delta": {...}}``) into calls on
the shared :class:`~agentworld.providers.assembly.PartsAssembler`; no I/O.
Anthropic's quirks, kept here:

* content arrives in blocks keyed by ``index``: a text block grows by
  ``text_delta``; a ``tool_use`` block names its id and tool in
  ``content_block_start`` and its input arrives as ``input_json_delta``
  fragments that only parse once joined, then are re-serialised like the
  non-streamed path's ``input`` object;
* block types we do not use (thinking, server tools) are ignored, so new kinds
  of blocks cannot break a stream;
* usage is split: input tokens (cached ones included) in ``message_start``, the
  final (cumulative) output count in ``message_delta``;
* a stream is complete only once ``message_stop`` arrived.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentworld.models import LLMResponse
from agentworld.providers.assembly import PartsAssembler


def input_tokens_of(usage: Mapping[str, Any]) -> int:
    """Anthropic counts cached prompt tokens apart; all of them were sent, so all are input."""
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(int(usage.get(key) or 0) for key in keys)


@dataclass
class AnthropicStreamAssembler:
    """Anthropic's stream events in, one response out."""

    finished: bool = False
    """True once ``message_stop`` arrived: a stream that ends without it was cut short."""
    _parts: PartsAssembler = field(
        default_factory=lambda: PartsAssembler(arguments="json"), init=False, repr=False
    )

    def feed(self, event: Mapping[str, Any]) -> str | None:
        """Take one event; return the text it adds, if any (for ``on_text``)."""
        match event.get("type"):
            case "message_start":
                message = event.get("message") or {}
                self._parts.model = message.get("model") or self._parts.model
                usage = message.get("usage") or {}
                self._parts.set_usage(
                    input_tokens=input_tokens_of(usage),
                    output_tokens=int(usage.get("output_tokens") or 0),
                )
            case "content_block_start":
                return self._start(int(event["index"]), event.get("content_block") or {})
            case "content_block_delta":
                return self._delta(int(event["index"]), event.get("delta") or {})
            case "message_delta":
                usage = event.get("usage") or {}
                # output_tokens here is the running total, not an increment.
                output = usage.get("output_tokens")
                self._parts.set_usage(
                    input_tokens=(
                        input_tokens_of(usage) if usage.get("input_tokens") is not None else None
                    ),
                    output_tokens=None if output is None else int(output),
                )
            case "message_stop":
                self.finished = True
        return None

    def _start(self, index: int, block: Mapping[str, Any]) -> str | None:
        match str(block.get("type", "")):
            case "text":
                self._parts.start_text(index)
                text = block.get("text")
                return self._parts.add_text(index, str(text)) if text else None
            case "tool_use":
                self._parts.start_tool_call(
                    index, id=str(block.get("id", "")), name=str(block.get("name", ""))
                )
            case _:
                self._parts.start_ignored(index)
        return None

    def _delta(self, index: int, delta: Mapping[str, Any]) -> str | None:
        kind = delta.get("type")
        if kind == "text_delta":
            return self._parts.add_text(index, str(delta.get("text") or "")) or None
        # Every other delta belongs to a tool_use block (one never started is opened
        # as such); only input_json_delta carries input.
        fragment = str(delta.get("partial_json") or "") if kind == "input_json_delta" else None
        self._parts.add_tool_call(index, arguments=fragment)
        return None

    def response(self) -> LLMResponse:
        return self._parts.response()
