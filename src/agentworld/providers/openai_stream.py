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

    def feed(self, chunk: ChatCompletionChunk) -> list[str]:
        """Take one chunk; return the text it adds, for ``on_text``."""
        self.set_model(chunk.model)
        if chunk.usage is not None:
            self.set_usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
        fresh: list[str] = []
        for choice in chunk.choices:
            if choice.finish_reason is not None:
                self.finished = True
            delta = choice.delta
            if delta.content:
                self.add_text(delta.content)
                fresh.append(delta.content)
            for fragment in delta.tool_calls or []:
                function = fragment.function
                self.add_tool_fragment(
                    fragment.index,
                    id=fragment.id,
                    name=function.name if function else None,
                    arguments=function.arguments if function else None,
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

