"""Anthropic Messages provider on the official ``anthropic`` SDK (SPEC L1, L2, L4).

Our prompt is in the OpenAI chat shape; Anthropic's differs in ways the API
enforces, so the conversion below is where they meet:

- system messages become the top-level ``system`` parameter;
- an assistant's tool calls are ``tool_use`` content blocks whose ``input`` is
  an object, not JSON text;
- tool results are ``tool_result`` blocks inside a *user* turn, all results of
  one assistant turn grouped in the turn right after it;
- roles must alternate, so consecutive turns of one role are merged;
- ``max_tokens`` is required.

``LLMRequest.temperature`` is not sent: the Messages API version this SDK
speaks has no sampling parameters (``messages.create`` does not accept one).
As for OpenAI, the SDK's own retries are off: ``RetryingProvider`` retries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentworld import strict_json
from agentworld.callbacks import maybe_await
from agentworld.errors import ProviderError, ProviderResponseError
from agentworld.models import LLMResponse, ToolCall, Usage
from agentworld.providers.anthropic_stream import AnthropicStreamAssembler, input_tokens_of
from agentworld.providers.assembly import arguments_text
from agentworld.providers.base import LLMRequest, PromptMessage, TextCallback, ToolSpec
from agentworld.providers.errors import connection_error, incomplete_stream, response_error

if TYPE_CHECKING:
    import anthropic

Block = dict[str, Any]

# An error sent inside a 200 stream (``event: error``) carries only its type; this
# gives it the status the same error has outside a stream, so retries treat it alike.
STATUS_OF_ERROR_TYPE: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def tool_input(arguments: str) -> dict[str, Any]:
    """Our JSON-text arguments as Anthropic's ``input`` object.

    Invalid or non-object text (which the runtime already answered with an error
    result; ``NaN`` too, which no JSON encoder sends) is kept under ``_raw`` so the model
    still sees what it sent.
    """
    try:
        value = strict_json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}


def _blocks(message: PromptMessage) -> list[Block]:
    blocks: list[Block] = []
    if message.role == "tool":
        result = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
        return [result | {"content": message.content or ""}]
    if message.content:  # Anthropic rejects empty text blocks
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.function.name,
                "input": tool_input(call.function.arguments),
            }
        )
    return blocks


def to_anthropic_messages(messages: Sequence[PromptMessage]) -> tuple[str | None, list[Block]]:
    """Split our prompt into Anthropic's ``system`` text and alternating ``messages``."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    turns: list[tuple[str, list[Block]]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"  # tool results are user turns
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    out: list[Block] = []
    for role, blocks in turns:
        # Tool results must open the user turn that answers a tool_use turn.
        blocks.sort(key=lambda block: block["type"] != "tool_result")
        if len(blocks) == 1 and blocks[0]["type"] == "text":
            out.append({"role": role, "content": blocks[0]["text"]})
        else:
            out.append({"role": role, "content": blocks})
    return system or None, out


def to_anthropic_tool(tool: ToolSpec) -> Block:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def from_anthropic_message(message: anthropic.types.Message) -> LLMResponse:
    """A non-streamed ``Message`` as our unified response (the same as the stream gives)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall.of(block.id, block.name, arguments_text(block.input)))
    usage = Usage(
        input_tokens=input_tokens_of(message.usage.to_dict()),
        output_tokens=message.usage.output_tokens,
    )
    content = "".join(texts)
    return LLMResponse.of(content, calls, usage=usage, model=message.model)


def _error_text(exc: anthropic.APIStatusError) -> str:
    if exc.api_message:
        return exc.api_message
    if isinstance(exc.body, dict):
        return json.dumps(exc.body)
    return str(exc.body or exc.message)


class AnthropicProvider:
    """A pure client for the Anthropic Messages API (or a server speaking it)."""

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        timeout: float = 120.0,
        max_tokens_default: int = 4096,
        client: anthropic.AsyncAnthropic | None = None,
    ) -> None:
        import anthropic
        import httpx2  # the SDK's HTTP client

        self._anthropic = anthropic
        self._transport_error: type[Exception] = httpx2.TransportError
        self.api_key_env = api_key_env
        self.max_tokens_default = max_tokens_default
        self._client = client or anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout
        )
        self.base_url = str(self._client.base_url)

    async def aclose(self) -> None:
        await self._client.close()

    def params(self, request: LLMRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for this request."""
        system, messages = to_anthropic_messages(request.messages)
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens or self.max_tokens_default,
            "messages": messages,
        }
        if system is not None:
            params["system"] = system
        if request.tools:
            params["tools"] = [to_anthropic_tool(t) for t in request.tools]
        return params

    async def complete(
        self, request: LLMRequest, *, stream: bool = False, on_text: TextCallback | None = None
    ) -> LLMResponse:
        params = self.params(request)
        try:
            if stream:
                return await self._stream(params, on_text)
            return from_anthropic_message(await self._client.messages.create(**params))
        except ProviderError:
            raise
        except self._anthropic.APIStatusError as exc:
            raise self._status_error(exc) from exc
        except self._anthropic.APIConnectionError as exc:  # timeouts too
            cause = f" ({type(exc.__cause__).__name__})" if exc.__cause__ else ""
            raise connection_error(
                f"cannot reach {self.base_url}: {exc}{cause}", endpoint=self.base_url
            ) from exc
        except self._transport_error as exc:
            # The SDK wraps transport failures only while sending; a stream cut or
            # timed out mid-body surfaces as the raw httpx2 error.
            raise connection_error(
                f"lost the connection to {self.base_url}: {type(exc).__name__}: {exc}",
                endpoint=self.base_url,
            ) from exc

    def _status_error(self, exc: anthropic.APIStatusError) -> ProviderResponseError:
        status = exc.status_code
        if status < 400:  # an ``event: error`` inside a 200 stream
            status = STATUS_OF_ERROR_TYPE.get(exc.type or "", 500)
        return response_error(
            endpoint=self.base_url,
            status=status,
            detail=_error_text(exc),
            api_key_env=self.api_key_env,
            headers=dict(exc.response.headers) if exc.response is not None else None,
        )

    async def _stream(self, params: dict[str, Any], on_text: TextCallback | None) -> LLMResponse:
        assembler = AnthropicStreamAssembler()
        events = await self._client.messages.create(**params, stream=True)
        async with events:
            async for event in events:
                text = assembler.feed(event.to_dict())
                if text and on_text is not None:
                    await maybe_await(on_text(text))
        if not assembler.finished:  # also a stream that ended inside a content block
            raise incomplete_stream(endpoint=self.base_url, missing="message_stop")
        return assembler.response()
