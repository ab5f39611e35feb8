"""A non-streamed chat completion posted straight on the provider's own HTTP client.

The SDK's ``client.post`` takes a request through several layers: its options as a model,
headers merged and checked again on every request, its retry loop, its response wrapper. For
an instant model those layers are half of what a request costs: 0.75 ms of CPU against 0.36 ms
to post the same bytes on the same HTTP client (1,000 requests at once, medians of eight rounds
alternated in one process), and a turn makes one to three such requests.

So a provider that built its SDK client itself posts a non-streamed completion here. What goes
out is what the SDK sends: the same URL (the client's ``base_url`` joined as the SDK joins it),
the SDK's own default headers and key (its telemetry headers left out, as the provider's client
leaves them out), the same JSON bytes, on the same HTTP client -- so the same pool, timeouts,
redirects, TLS and proxies. What comes back is read as the SDK reads it, and every failure
becomes the ``ProviderError`` the SDK's path gives (``OpenAIProvider`` maps both the same way).

Streaming stays on the SDK's path (its event stream), and so do clients made elsewhere: an
Azure client's key, token refresh and deployment URLs are the SDK's business.
"""

from __future__ import annotations

import json
import ssl
from typing import TYPE_CHECKING, Any

import anyio
import httpx2

from agentworld.providers.errors import response_error, transport_failure, unreadable_body
from agentworld.providers.openai_completion import status_detail

if TYPE_CHECKING:
    import openai

CONNECTION_FAILURES: tuple[type[BaseException], ...] = (
    httpx2.RequestError,
    ssl.SSLError,
    anyio.EndOfStream,
)
"""What the SDK turns into "Connection error." (``openai._httpx2.request_exceptions``): a
request that could not be sent or whose answer could not be read."""


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
        body = json.dumps(params, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        request = self._http.build_request(
            "POST", self._url, headers=self._headers, content=body.encode()
        )
        try:
            response = await self._http.send(request)
        except httpx2.TimeoutException as exc:
            raise transport_failure(exc, said="Request timed out.", endpoint=self._endpoint) from exc
        except CONNECTION_FAILURES as exc:
            raise transport_failure(exc, said="Connection error.", endpoint=self._endpoint) from exc
        if not 200 <= response.status_code < 300:
            raise response_error(
                endpoint=self._endpoint,
                status=response.status_code,
                detail=status_detail(response.status_code, response.text),
                api_key_env=self._api_key_env,
                headers=dict(response.headers),
            )
        content_type = response.headers.get("content-type", "*").split(";")[0]
        if not content_type.endswith("json"):
            return response.text
        try:
            return json.loads(response.content)
        except ValueError as exc:  # not JSON, or not in a Unicode encoding at all
            raise unreadable_body(exc, endpoint=self._endpoint) from exc
