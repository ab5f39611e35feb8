"""A chat completion posted straight on the provider's own HTTP client, whole or streamed.

The SDK's ``client.post`` takes a request through several layers: its options as a model,
headers merged and checked again on every request, its retry loop, its response wrapper. For
an instant model those layers are about half of what a request costs, against posting the
same bytes on the same HTTP client (``benchmarks/README.md``), and a turn makes one to three
such requests.

So a provider that built its SDK client itself posts its completions here. What goes
out is what the SDK sends: the same URL (the client's ``base_url`` joined as the SDK joins it),
the SDK's own default headers and key (its telemetry headers left out, as the provider's client
leaves them out), the same JSON bytes, on the same HTTP client -- so the same pool, timeouts,
redirects, TLS and proxies. What comes back is read as the SDK reads it, and every failure
becomes the ``ProviderError`` the SDK's path gives (``OpenAIProvider`` maps both the same way).

A stream is read as the SDK reads it too: server-sent events (the HTML standard's rules, which
the SDK's decoder follows), each event's data parsed as JSON up to ``[DONE]``, the rest of the
body then read so the connection can serve the next request, an event holding an ``error``
raised as the endpoint's error. Its chunks are JSON read by hand
(``StreamAssembler.feed_event``), where the SDK builds a typed model of each: 2.1 ms of CPU
for a streamed request of a few chunks at 1,000 at once, against 0.4 ms for a whole one.

Clients made elsewhere keep the SDK's path: an Azure client's key, token refresh and deployment
URLs are the SDK's business.
"""

from __future__ import annotations

import json
import re
import ssl
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
import httpx2

from agentworld.errors import ProviderConnectionError
from agentworld.providers.errors import response_error, transport_failure, unreadable_body
from agentworld.providers.openai_completion import status_detail, stream_error

if TYPE_CHECKING:
    import openai

CONNECTION_FAILURES: tuple[type[BaseException], ...] = (
    httpx2.RequestError,
    ssl.SSLError,
    anyio.EndOfStream,
)
"""What the SDK turns into "Connection error." (``openai._httpx2.request_exceptions``): a
request that could not be sent or whose answer could not be read."""
READ_FAILURES: tuple[type[BaseException], ...] = (httpx2.TimeoutException, *CONNECTION_FAILURES)
"""Those and a timeout ("Request timed out.")."""


class CompletionPoster:
    """Posts ``/chat/completions`` bodies for one SDK client, on the HTTP client it was given."""

    def __init__(self, client: openai.AsyncOpenAI, http: httpx2.AsyncClient, *, api_key_env: str) -> None:
        import openai

        base = client.base_url
        self._url = base.copy_with(raw_path=base.raw_path + b"chat/completions")
        self._headers = {
            name: value
            for name, value in {**client.auth_headers, **client.default_headers}.items()
            if not isinstance(value, openai.Omit)
        }
        self._http = http
        self._endpoint = str(base)
        self._api_key_env = api_key_env

    async def post(self, params: dict[str, Any]) -> object:
        """The answer's body, parsed from JSON (text when it does not say it is JSON, as the
        SDK gives it); a failure is raised as the provider's error."""
        response = await self._send(params, stream=False)
        content_type = response.headers.get("content-type", "*").split(";")[0]
        if not content_type.endswith("json"):
            return response.text
        try:
            return json.loads(response.content)
        except ValueError as exc:  # not JSON, or not in a Unicode encoding at all
            raise unreadable_body(exc, endpoint=self._endpoint) from exc

    async def events(self, params: dict[str, Any]) -> AsyncGenerator[object, None]:
        """Each event of the streamed answer, parsed from JSON, up to ``[DONE]``; a failure is
        raised as the provider's error (a body that is not JSON as ``JSONDecodeError``, which
        the provider reports as the SDK's path does). Close it (``aclosing``) when done."""
        response = await self._send(params, stream=True)
        chunks = response.aiter_bytes()
        try:
            async for data in self._event_data(chunks):
                if data.startswith("[DONE]"):
                    if response.http_version == "HTTP/1.1":  # read to the end: the connection
                        await _read_rest(chunks)  # then serves the next request
                    return
                event = json.loads(data)
                if isinstance(event, dict) and event.get("error"):
                    raise stream_error(event["error"], endpoint=self._endpoint)
                yield event
        finally:
            await response.aclose()

    async def _send(self, params: dict[str, Any], *, stream: bool) -> httpx2.Response:
        body = json.dumps(params, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        request = self._http.build_request(
            "POST", self._url, headers=self._headers, content=body.encode()
        )
        try:
            response = await self._http.send(request, stream=stream)
            if not 200 <= response.status_code < 300:
                await response.aread()
        except READ_FAILURES as exc:
            raise self._failed(exc) from exc
        if not 200 <= response.status_code < 300:
            raise response_error(
                endpoint=self._endpoint,
                status=response.status_code,
                detail=status_detail(response.status_code, response.text),
                api_key_env=self._api_key_env,
                headers=dict(response.headers),
            )
        return response

    async def _event_data(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
        """The data of each server-sent event of a body, its read failures said as the SDK
        says them."""
        try:
            async for data in event_data(chunks):
                yield data
        except READ_FAILURES as exc:
            raise self._failed(exc) from exc

    def _failed(self, exc: BaseException) -> ProviderConnectionError:
        """A failure of the HTTP client, in the SDK's words for it."""
        timed_out = isinstance(exc, httpx2.TimeoutException)
        said = "Request timed out." if timed_out else "Connection error."
        return transport_failure(exc, said=said, endpoint=self._endpoint)


async def _read_rest(chunks: AsyncIterator[bytes]) -> None:
    try:
        async for _ in chunks:
            pass
    except READ_FAILURES:
        pass  # the answer is whole; only the connection is lost, and it is not reused


_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


async def event_data(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The data of each server-sent event in a body that arrives in ``chunks``, by the HTML
    standard's rules: lines end in CR LF, LF or CR; a blank line ends an event; ``data``
    fields are joined by LF; comments and other fields are skipped; an event without data is
    none; a last event not ended by a blank line is dropped. Lines must be UTF-8
    (``UnicodeDecodeError`` otherwise, as in the SDK's decoder)."""
    data: list[str] = []
    line_so_far: list[bytes] = []  # a line that began in an earlier chunk
    after_cr = False
    async for chunk in chunks:
        if after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CR LF cut between two chunks
        after_cr = chunk.endswith(b"\r")
        *ended, rest = _LINE_BREAK.split(chunk)  # each chunk is searched once: no rescans
        if ended and line_so_far:
            ended[0] = b"".join([*line_so_far, ended[0]])
            line_so_far = []
        if rest:
            line_so_far.append(rest)
        for raw in ended:
            line = raw.decode("utf-8")
            if not line:
                if data:
                    yield "\n".join(data)
                    data = []
                continue
            field, _, value = line.partition(":")
            if field == "data":
                data.append(value[1:] if value.startswith(" ") else value)
