"""Assemble an Anthropic Messages stream into one ``LLMResponse``.

A pure state machine with no I/O: feed it each SSE event's JSON payload (the
wire shape, e.g. ``{"type": "content_block_delta", "index": 1, "delta": {...}}``)
and read the response at the end. Content arrives in blocks keyed by
``index``: a text block grows by ``text_delta``; a ``tool_use`` block names its
id and tool in ``content_block_start`` and its input arrives as
``input_json_delta`` fragments that only parse once joined. Usage is split too:
input tokens in ``message_start``, the final (cumulative) output count in
``message_delta``. Block types we do not use (thinking, server tools) are
skipped, so new kinds of blocks cannot break a stream.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentworld.models import LLMResponse, ToolCall, Usage


def input_tokens_of(usage: Mapping[str, Any]) -> int:
    """Anthropic counts cached prompt tokens apart; all of them were sent, so all are input."""
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(int(usage.get(key) or 0) for key in keys)


def arguments_text(value: Any) -> str:
    """A tool's ``input`` as the JSON text our ``ToolCall`` carries, the same in both modes."""
    return json.dumps(value, ensure_ascii=False)


@dataclass
class _Block:
    type: str
    text: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""


@dataclass
class AnthropicStreamAssembler:
    blocks: dict[int, _Block] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    finished: bool = False
    """True once ``message_stop`` arrived: a stream that ends without it was cut short."""

    def feed(self, event: Mapping[str, Any]) -> str | None:
        """Take one event; return the text it adds, if any (for ``on_text``)."""
        match event.get("type"):
            case "message_start":
                message = event.get("message") or {}
                self.model = message.get("model") or self.model
                usage = message.get("usage") or {}
                self.usage = Usage(
                    input_tokens=input_tokens_of(usage),
                    output_tokens=int(usage.get("output_tokens") or 0),
                )
            case "content_block_start":
                block = event.get("content_block") or {}
                kind = str(block.get("type", ""))
                start = _Block(
                    type=kind, id=str(block.get("id", "")), name=str(block.get("name", ""))
                )
                self.blocks[int(event["index"])] = start
                if kind == "text" and block.get("text"):
                    start.text.append(block["text"])
                    return str(block["text"])
            case "content_block_delta":
                return self._delta(int(event["index"]), event.get("delta") or {})
            case "message_delta":
                usage = event.get("usage") or {}
                # output_tokens here is the running total, not an increment.
                output = usage.get("output_tokens")
                input_ = input_tokens_of(usage) if usage.get("input_tokens") is not None else None
                self.usage = Usage(
                    input_tokens=self.usage.input_tokens if input_ is None else input_,
                    output_tokens=self.usage.output_tokens if output is None else int(output),
                )
            case "message_stop":
                self.finished = True
        return None

    def _delta(self, index: int, delta: Mapping[str, Any]) -> str | None:
        kind = delta.get("type")
        block = self.blocks.setdefault(
            index, _Block(type="text" if kind == "text_delta" else "tool_use")
        )
        if kind == "text_delta" and block.type == "text":
            text = str(delta.get("text") or "")
            block.text.append(text)
            return text or None
        if kind == "input_json_delta" and block.type == "tool_use":
            block.text.append(str(delta.get("partial_json") or ""))
        return None

    def response(self) -> LLMResponse:
        ordered = [block for _, block in sorted(self.blocks.items())]
        content = "".join("".join(b.text) for b in ordered if b.type == "text")
        calls = [
            ToolCall.of(b.id, b.name, _joined_input(b.text))
            for b in ordered
            if b.type == "tool_use"
        ]
        return LLMResponse.of(content, calls, usage=self.usage, model=self.model)


def _joined_input(fragments: list[str]) -> str:
    """Re-serialise valid input like the non-streamed path; keep invalid text for the runtime to report."""
    text = "".join(fragments)
    if not text.strip():
        return "{}"
    try:
        return arguments_text(json.loads(text))
    except ValueError:
        return text
