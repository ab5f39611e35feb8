"""OpenAI chat-completions provider on the official ``openai`` SDK.

Requests carry a body we already build in wire format: ``chat.completions.create`` would walk
and re-transform every message of the history (about 0.13 ms per message), which dominates a
turn with a long memory. A completion is posted straight on the SDK client's HTTP client when
the provider built that client itself (``openai_post``: the SDK's request and response layers
were half a whole request's CPU, two thirds of a streamed one's), else through the SDK's
documented low-level ``client.post``. A whole response is read from its JSON
(``openai_completion``); a stream's chunks from their JSON too on the direct path, as the SDK's
typed models on its own.

Also serves every OpenAI-compatible endpoint (Ollama, xAI, OpenRouter, local
servers) through ``base_url``. The SDK's own retries are turned off: retrying
is the job of ``RetryingProvider``, so every provider retries the same way. Its platform
headers (this host's OS, CPU and Python) are left out (``SDK_PLATFORM_HEADERS``).

Connections: one provider (one client, one connection pool) serves every agent on its
endpoint, so a world with a thousand chats puts a thousand requests on it at once. The SDK's
pool would open up to 1,000 connections, and its bookkeeping walks every connection (and
probes the socket of each idle one) twice per request, so with a thousand requests in
flight that bookkeeping costs more than the request itself (figures in ``benchmarks/README.md``).
So the pool is kept small
(``max_connections``) and the requests beyond it wait in :class:`ConnectionSlots`, in order
and without a deadline: a slow model makes them wait, never fail. ``timeout`` bounds each
request once it has a connection (connect, write, each read), not the wait for one. A plain
``http://`` endpoint (a local model server) gets a leaner transport under the SDK instead of its
pool, with the same limits (``plain_http``).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from agentworld.callbacks import maybe_await
from agentworld.errors import (
    ProviderError,
    ProviderResponseError,
)
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
    import ssl

    import openai

    from agentworld.providers.openai_post import CompletionPoster

DEFAULT_MAX_CONNECTIONS = 64
"""Requests one provider has on the wire at once (``AGENTWORLD_LLM_CONNECTIONS`` changes it).
The pool's bookkeeping costs about 4 µs per connection per request on a 2-core machine (0.26
ms a request at 32, 0.53 at 64, with 1,000 in flight), and a slow model serves at most this
many chats at a time per process: 64 keeps a real model's many chats moving at a small cost."""


def pooled_http_client(
    max_connections: int, timeout: float, base_url: str | None = None
) -> openai.DefaultAsyncHttpxClient:
    """The SDK's own HTTP client (``openai.DefaultAsyncHttpxClient``: its redirects, proxies
    from the environment and TLS defaults) with a pool of ``max_connections`` that all stay
    open between requests, so a busy endpoint is not reconnected (a TLS handshake each time).

    The limits are built from the type of the SDK's published default
    (``openai.DEFAULT_CONNECTION_LIMITS``): its HTTP package is not one we depend on, and
    importing ``httpx`` for its ``Limits`` would cost a CLI turn 90 ms.

    An endpoint named by a plain ``http://`` URL (a local model server) and reached without a
    proxy gets :class:`~agentworld.providers.plain_http.PlainHTTPTransport` (see its module for
    why). Through a proxy, it gets the SDK's transport with :func:`no_trust_context` instead of
    the default TLS context, which loads every trusted CA certificate of the system (25 ms of a
    fresh process's first turn) for TLS it never speaks.
    """
    import openai

    from agentworld.providers.plain_http import PlainHTTPTransport, is_plain_http_endpoint

    if is_plain_http_endpoint(base_url):
        return openai.DefaultAsyncHttpxClient(
            transport=PlainHTTPTransport(max_connections=max_connections),
            timeout=request_timeout(timeout),
        )
    limits = type(openai.DEFAULT_CONNECTION_LIMITS)(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    if base_url is not None and base_url.lower().startswith("http://"):  # through a proxy
        return openai.DefaultAsyncHttpxClient(
            limits=limits, timeout=request_timeout(timeout), verify=no_trust_context()
        )
    return openai.DefaultAsyncHttpxClient(limits=limits, timeout=request_timeout(timeout))


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
needs them to answer; they tell a third party which OS, CPU and Python this host runs; and
building, checking and sending seven more headers is a measurable share of a request's CPU
(``benchmarks/README.md``). So they are left out -- and never computed: the SDK asks the OS
for them (``platform.platform()`` runs ``uname -p`` in a subprocess),
on the event loop when a provider reads its client's headers (:func:`sdk_client_class`)."""


def without_platform_headers() -> dict[str, Any]:
    """``default_headers`` for an SDK client that leaves out :data:`SDK_PLATFORM_HEADERS`
    (``openai.Omit``: the SDK's own way to drop a default header)."""
    import openai

    return {name: openai.Omit() for name in SDK_PLATFORM_HEADERS}


@functools.cache
def sdk_client_class() -> type[openai.AsyncOpenAI]:
    """``openai.AsyncOpenAI`` whose platform headers are none: the provider leaves them out
    (:data:`SDK_PLATFORM_HEADERS`), so asking the OS for them is wasted -- and blocks the
    event loop, in ``CompletionPoster`` reading the client's headers. Its name is the SDK's,
    as is every header it sends (``User-Agent`` is made of the class's name)."""
    import openai

    class AsyncOpenAI(openai.AsyncOpenAI):
        def platform_headers(self) -> dict[str, str]:
            return {}

    return AsyncOpenAI


def sdk_client(
    *,
    api_key: str,
    base_url: str | None,
    timeout: float,
    max_connections: int,
    http_client: openai.DefaultAsyncHttpxClient | None = None,
) -> openai.AsyncOpenAI:
    """The SDK client a provider sends an endpoint's requests with: no SDK retries (they are
    ``RetryingProvider``'s job), on ``http_client`` (by default one of
    :func:`pooled_http_client`), no platform headers. Benchmarks replay a turn's request on
    one of these, so that the turn and its replay send the same request."""
    return sdk_client_class()(
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        timeout=request_timeout(timeout),
        http_client=http_client or pooled_http_client(max_connections, timeout, base_url),
        default_headers=without_platform_headers(),
    )


def no_trust_context() -> ssl.SSLContext:
    """A TLS client context that trusts no certificate: for a client whose endpoint speaks
    plain HTTP. Should anything lead it to ``https://`` (a redirect, a proxy), the handshake
    fails for want of a trusted certificate: it never connects unverified."""
    import ssl

    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies hostnames and certificates


def request_timeout(timeout: float) -> openai.Timeout:
    """``timeout`` for connecting, writing and each read, and none for the wait for a
    connection: the pool's wait would otherwise fail a request queued behind slow ones."""
    import openai

    return openai.Timeout(timeout, pool=None)


class ConnectionSlots:
    """Admits ``2 * max_connections`` requests to the HTTP pool; the others wait here, first
    come first served, for as long as it takes (a cancelled waiter just leaves the line).

    Why not let the pool queue all of them: its bookkeeping walks its whole queue on every
    request. Why admit twice the connections: the requests waiting inside the pool take a
    connection the moment it is released, so the pool seldom holds idle connections, and it
    probes the socket of every idle one on each request (half the pool's cost at 32).
    """

    def __init__(self, max_connections: int) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self.max_connections = max_connections
        self._admitted = asyncio.Semaphore(2 * max_connections)

    async def __aenter__(self) -> None:
        await self._admitted.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self._admitted.release()


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
        """``client``, when given, is used as built, the SDK's ``post`` included. Without one,
        :func:`sdk_client` builds it, and completions, whole and streamed, are posted straight
        on its HTTP client (``openai_post`` says why)."""
        import openai
        import openai.types.chat

        from agentworld.providers.openai_post import CompletionPoster

        self._openai = openai
        self._types = openai.types.chat
        self._chunk_stream = openai.AsyncStream[openai.types.chat.ChatCompletionChunk]
        self.api_key_env = api_key_env
        self.max_connections = max_connections
        self._slots = ConnectionSlots(max_connections)
        self._poster: CompletionPoster | None = None
        if client is None:
            http = pooled_http_client(max_connections, timeout, base_url)
            client = sdk_client(
                api_key=api_key,
                base_url=base_url,
                timeout=timeout,
                max_connections=max_connections,
                http_client=http,
            )
            self._poster = CompletionPoster(client, http, api_key_env=api_key_env)
        self._client = client
        self.base_url = str(client.base_url)

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
            async with self._slots:  # held until the response is read (and the stream closed)
                if stream:
                    return await self._stream(params, on_text)
                return await self._generate(params)
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

    async def _generate(self, params: dict[str, Any]) -> LLMResponse:
        # The body as parsed JSON, not the SDK's typed models (``openai_completion`` says why).
        if self._poster is not None:
            body = await self._poster.post(params)
        else:
            body = await self._client.post("/chat/completions", body=params, cast_to=object)
        return completion_response(body, endpoint=self.base_url)

    async def _stream(self, params: dict[str, Any], on_text: TextCallback | None) -> LLMResponse:
        assembler = StreamAssembler()
        body = {**params, "stream": True, "stream_options": {"include_usage": True}}
        async with aclosing(self._chunk_texts(body, assembler)) as chunks:  # closed at once
            async for fresh in chunks:  # when on_text fails or the call is cancelled
                for text in fresh:
                    if on_text is not None:
                        await maybe_await(on_text(text))
        if not assembler.finished:
            raise incomplete_stream(endpoint=self.base_url, missing="a finish_reason")
        return assembler.response()

    async def _chunk_texts(
        self, body: dict[str, Any], assembler: StreamAssembler
    ) -> AsyncGenerator[list[str], None]:
        """Each chunk of the stream fed to ``assembler``, as the text it adds."""
        if self._poster is not None:
            async with aclosing(self._poster.events(body)) as events:
                async for event in events:
                    yield assembler.feed_event(event, endpoint=self.base_url)
            return
        stream = await self._client.post(
            "/chat/completions",
            body=body,
            cast_to=self._types.ChatCompletion,
            stream=True,
            stream_cls=self._chunk_stream,
        )
        async with stream:
            async for chunk in stream:
                yield assembler.feed(chunk)
