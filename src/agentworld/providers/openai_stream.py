"""Read an OpenAI chat-completions stream into one ``LLMResponse``.

A thin translation of OpenAI's chunks into calls on the shared
:class:`~agentworld.providers.assembly.PartsAssembler`; no I/O. OpenAI's quirks,
kept here:

* text has no index, so it is the one running text part (``TEXT_KEY``);
* tool calls arrive as fragments keyed by their ``index``: the first carries the
  id and name, later ones append to the arguments text, and several calls may
  interleave (SPEC L4: all are kept, ordered by index);
* a call that never got an id is ``call_<index>``, stable across runs;
* arguments are kept verbatim (``"{}"`` when none came), as in the non-streamed
  path, which does not parse them either;
* every chunk names the model; the first one stands;
* a stream is complete only once a choice carried its ``finish_reason``. The SDK
  swallows the ``data: [DONE]`` that follows (and the usage chunk is optional for
  OpenAI-compatible servers), so ``finish_reason`` is the marker we can see.

Chunks come as the SDK's typed models, read from the stream by the SDK's ``AsyncStream``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworld.models import LLMResponse
from agentworld.providers.assembly import TEXT_KEY, PartsAssembler
from agentworld.providers.openai_completion import usage_of, wrong_shape

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionChunk


def _index_id(index: int, name: str, arguments: str) -> str:
    return f"call_{index}"


class StreamAssembler:
    """OpenAI's stream deltas in, one response out."""

    def __init__(self, *, model: str | None = None) -> None:
        self._parts = PartsAssembler(arguments="verbatim", fallback_id=_index_id, model=model)
        self.finished = False
        """True once a ``finish_reason`` arrived: a stream that ends without one was cut short."""

    def feed(self, chunk: ChatCompletionChunk, *, endpoint: str) -> list[str]:
        """Take one chunk; return the text it adds, for ``on_text``. The SDK builds chunks
        without validating them, so one in the wrong shape is said here, in one line."""
        try:
            return self._feed(chunk)
        except (AttributeError, TypeError) as exc:
            raise wrong_shape(endpoint, "a stream chunk that is not a completion chunk") from exc

    def _feed(self, chunk: ChatCompletionChunk) -> list[str]:
        if isinstance(chunk.model, str):
            self.set_model(chunk.model)
        if chunk.usage is not None:
            counts = usage_of(chunk.usage.to_dict())
            self.set_usage(counts.input_tokens, counts.output_tokens)
        fresh: list[str] = []
        for choice in chunk.choices:
            if choice.finish_reason is not None:
                self.finished = True
            delta = choice.delta
            if content := _text(delta.content):
                self.add_text(content)
                fresh.append(content)
            for fragment in delta.tool_calls or []:
                function = fragment.function
                if not isinstance(fragment.index, int) or isinstance(fragment.index, bool):
                    raise TypeError("a streamed tool call without an index")
                self.add_tool_fragment(
                    fragment.index,
                    id=_text(fragment.id),
                    name=_text(function.name) if function else None,
                    arguments=_text(function.arguments) if function else None,
                )
        return fresh

    def set_model(self, model: str) -> None:
        self._parts.model = self._parts.model or model

    def add_text(self, fragment: str) -> None:
        self._parts.add_text(TEXT_KEY, fragment)

    def add_tool_fragment(
        self, index: int, *, id: str | None, name: str | None, arguments: str | None
    ) -> None:
        self._parts.add_tool_call(index, id=id, name=name, arguments=arguments)

    def set_usage(self, input_tokens: int, output_tokens: int) -> None:
        """A usage report gives both counts; the last one wins."""
        self._parts.set_usage(input_tokens=input_tokens, output_tokens=output_tokens)

    def response(self) -> LLMResponse:
        return self._parts.response()


def _text(value: object) -> str | None:
    """A text field of a chunk: text or absent; anything else is a chunk in the wrong shape."""
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{type(value).__name__} where text belongs")
