"""OpenAI chat-completions provider on the official ``openai`` SDK, on the SDK's own HTTP client
with the transport the SDK offers for many concurrent requests (``openai.DefaultAioHttpClient``).

Also serves every OpenAI-compatible endpoint (Ollama, xAI, OpenRouter, Azure, local servers)
through ``base_url``. Requests go through the SDK's documented low-level ``client.post``: we
build the body in wire format ourselves (``chat.completions.create`` would walk and transform
every message of the history again), a whole answer comes back as its parsed JSON
(``openai_completion``), a stream as the SDK's ``AsyncStream`` of typed chunks
(``openai_stream``). The SDK's retries are off: retrying is ``RetryingProvider``'s job, so
every provider retries the same way. Its platform headers (this host's OS, CPU and Python) are
left out (``SDK_PLATFORM_HEADERS``).

Connections: one provider (one client, one connection pool) serves every agent on its
endpoint, so a world with a thousand chats puts a thousand requests on it at once. The SDK's
pool is given ``max_connections`` connections, all kept open between requests, and no
deadline for the wait for one (``pool=None``): the requests beyond the limit wait in the pool,
in order, and a slow model makes them wait, never fail. ``timeout`` bounds each request once it
has a connection (connect, write, each read); ``RetryingProvider`` bounds the call as a whole.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentworld.callbacks import maybe_await
from agentworld.errors import ProviderError, ProviderResponseError
from agentworld.models import LLMResponse
from agentworld.providers.base import LLMRequest, PromptMessage, TextCallback, ToolSpec
from agentworld.providers.errors import (
    incomplete_stream,
    response_error,
    transport_error,
    unreadable_body,
)
from agentworld.providers.openai_completion import completion_response, error_text, stream_error
from agentworld.providers.openai_stream import StreamAssembler

if TYPE_CHECKING:
    import openai

DEFAULT_MAX_CONNECTIONS = 64
"""Requests one provider has on the wire at once (``AGENTWORLD_LLM_CONNECTIONS`` changes it):
a slow model serves at most this many chats at a time per process."""


def http_client(max_connections: int, timeout: float) -> openai.DefaultAioHttpClient:
    """The SDK's own HTTP client on the transport the SDK offers for many concurrent requests
    (``openai.DefaultAioHttpClient``: aiohttp under the SDK's client, with its redirects,
    proxies from the environment and TLS defaults), with a pool of ``max_connections`` that
    all stay open between requests, so a busy endpoint is not reconnected."""
    import httpx2  # the SDK's HTTP package: its Limits configure the SDK client's pool
    import openai

    limits = httpx2.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return openai.DefaultAioHttpClient(limits=limits, timeout=request_timeout(timeout))


SDK_PLATFORM_HEADERS = (
    "X-Stainless-Lang",
    "X-Stainless-Package-Version",
    "X-Stainless-OS",
    "X-Stainless-Arch",
    "X-Stainless-Runtime",
    "X-Stainless-Runtime-Version",
    "X-Stainless-Async",
)
"""Headers the SDK adds to every request to describe the machine it runs on. No model server
needs them to answer, and they tell a third party which OS, CPU and Python this host runs, so
they are left out."""


def without_platform_headers() -> dict[str, Any]:
    """``default_headers`` for an SDK client that leaves out :data:`SDK_PLATFORM_HEADERS`
    (``openai.Omit``: the SDK's own way to drop a default header)."""
    import openai

    return {name: openai.Omit() for name in SDK_PLATFORM_HEADERS}


def sdk_client(
    *, api_key: str, base_url: str | None, timeout: float, max_connections: int
) -> openai.AsyncOpenAI:
    """The SDK client a provider sends an endpoint's requests with: no SDK retries (they are
    ``RetryingProvider``'s job), on :func:`http_client`, no platform headers."""
    import openai

    return openai.AsyncOpenAI(
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        timeout=request_timeout(timeout),
        http_client=http_client(max_connections, timeout),
        default_headers=without_platform_headers(),
    )


def request_timeout(timeout: float) -> openai.Timeout:
    """``timeout`` for connecting, writing and each read, and none for the wait for a
    connection: the pool's wait would otherwise fail a request queued behind slow ones."""
    import openai

    return openai.Timeout(timeout, pool=None)


def to_openai_message(message: PromptMessage) -> dict[str, Any]:
    payload: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        payload["tool_calls"] = [call.model_dump() for call in message.tool_calls]
    if message.tool_call_id is not None:
        payload["tool_call_id"] = message.tool_call_id
    return payload


def to_openai_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


class OpenAIProvider:
    """A pure client for one OpenAI-compatible endpoint."""

    name = "openai"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        client: openai.AsyncOpenAI | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        """``client``, when given, is used as built (Azure's); else :func:`sdk_client`."""
        import openai
        import openai.types.chat

        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self._openai = openai
        self._types = openai.types.chat
        self._chunk_stream = openai.AsyncStream[openai.types.chat.ChatCompletionChunk]
        self.api_key_env = api_key_env
        self.max_connections = max_connections
        self._client = client or sdk_client(
            api_key=api_key, base_url=base_url, timeout=timeout, max_connections=max_connections
        )
        self.base_url = str(self._client.base_url)

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(
        self, request: LLMRequest, *, stream: bool = False, on_text: TextCallback | None = None
    ) -> LLMResponse:
        params: dict[str, Any] = {
            "model": request.model,
            "messages": [to_openai_message(m) for m in request.messages],
        }
        if request.tools:
            params["tools"] = [to_openai_tool(t) for t in request.tools]
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.max_tokens is not None:
            params["max_tokens"] = request.max_tokens
        try:
            if stream:
                return await self._stream(params, on_text)
            body = await self._client.post("/chat/completions", body=params, cast_to=object)
            return completion_response(body, endpoint=self.base_url)
        except ProviderError:
            raise
        except self._openai.APIStatusError as exc:
            raise self._status_error(exc) from exc
        except self._openai.APIConnectionError as exc:  # timeouts and cut streams too
            raise transport_error(exc, endpoint=self.base_url) from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            # The SDK's json.loads of a body or an event: not JSON, or in no Unicode encoding.
            raise unreadable_body(exc, endpoint=self.base_url) from exc
        except self._openai.APIError as exc:  # an error event inside a stream
            raise stream_error(exc.body, endpoint=self.base_url) from exc

    def _status_error(self, exc: openai.APIStatusError) -> ProviderResponseError:
        return response_error(
            endpoint=self.base_url,
            status=exc.status_code,
            detail=error_text(exc.body, str(exc.message or exc)),
            api_key_env=self.api_key_env,
            headers=dict(exc.response.headers) if exc.response is not None else None,
        )

    async def _stream(self, params: dict[str, Any], on_text: TextCallback | None) -> LLMResponse:
        assembler = StreamAssembler()
        body = {**params, "stream": True, "stream_options": {"include_usage": True}}
        stream = await self._client.post(
            "/chat/completions",
            body=body,
            cast_to=self._types.ChatCompletion,
            stream=True,
            stream_cls=self._chunk_stream,
        )
        async with stream:  # closed at once when on_text fails or the call is cancelled
            async for chunk in stream:
                for text in assembler.feed(chunk, endpoint=self.base_url):
                    if on_text is not None:
                        await maybe_await(on_text(text))
        if not assembler.finished:
            raise incomplete_stream(endpoint=self.base_url, missing="a finish_reason")
        return assembler.response()
