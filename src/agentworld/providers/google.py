"""Gemini provider on the official ``google-genai`` SDK (the Gemini Developer API).

The SDK is imported when the provider is built, not when this module is, so the
CLI starts fast. Three SDK defaults are overridden on purpose:

* retries: ``HttpRetryOptions(attempts=1)``. Without retry options the SDK does
  not retry statuses, but over aiohttp it silently retries a failed connection
  once after sleeping 1-10 s; ``RetryingProvider`` owns retrying for every provider.
* API version: pinned to ``v1beta`` (this SDK defaults to ``v1``), the version
  Gemini documents function calling, call ids and thought signatures against.
* automatic function calling: off; the runtime runs tools (policy, approval).

Request and response conversion lives in :mod:`agentworld.providers.google_convert`.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import TYPE_CHECKING, Any

from agentworld.callbacks import maybe_await
from agentworld.errors import ProviderError, ProviderResponseError
from agentworld.models import LLMResponse
from agentworld.providers.base import LLMRequest, TextCallback
from agentworld.providers.errors import connection_error, incomplete_stream, masked, response_error

if TYPE_CHECKING:
    from google import genai
    from google.genai import errors as genai_errors

    from agentworld.providers.google_convert import ResponseAssembler

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
API_VERSION = "v1beta"


def transport_errors() -> tuple[type[BaseException], ...]:
    """The exceptions the SDK lets through when the endpoint cannot be reached.

    The SDK sends over httpx2 when installed, else httpx, or aiohttp when asked;
    it wraps none of their errors. aiohttp times out with a bare ``TimeoutError``.
    """
    found: list[type[BaseException]] = []
    for module, name in (("httpx2", "TransportError"), ("httpx", "TransportError")):
        with contextlib.suppress(ImportError):
            found.append(getattr(importlib.import_module(module), name))
    with contextlib.suppress(ImportError):
        import aiohttp

        found += [aiohttp.ClientError, TimeoutError]
    return tuple(found)


def _is_key_rejected(exc: genai_errors.APIError) -> bool:
    """Gemini answers a bad API key with 400 INVALID_ARGUMENT, reason ``API_KEY_INVALID``."""
    details = exc.details.get("error", exc.details) if isinstance(exc.details, dict) else {}
    infos = details.get("details") if isinstance(details, dict) else None
    reasons = {d.get("reason") for d in infos or [] if isinstance(d, dict)}
    return "API_KEY_INVALID" in reasons or "API key not valid" in (exc.message or "")


class GoogleProvider:
    """A pure client for the Gemini API (or anything speaking its wire format)."""

    name = "google"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        api_key_env: str = "GOOGLE_API_KEY",
        timeout: float = 120.0,
        client: genai.Client | None = None,
    ) -> None:
        from google import genai
        from google.genai import errors, types

        from agentworld.providers import google_convert

        self._errors = errors
        self._convert = google_convert
        self._transport_errors = transport_errors()
        self.api_key_env = api_key_env
        self.base_url = base_url or DEFAULT_BASE_URL
        options = types.HttpOptions(
            base_url=base_url,
            api_version=API_VERSION,
            timeout=round(timeout * 1000),  # milliseconds
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        # vertexai=False: GOOGLE_GENAI_USE_VERTEXAI in the environment must not reroute us.
        self._client = client or genai.Client(api_key=api_key, vertexai=False, http_options=options)

    async def aclose(self) -> None:
        await self._client.aio.aclose()
        self._client.close()  # the SDK builds a sync client too; it never opened a socket

    async def complete(
        self, request: LLMRequest, *, stream: bool = False, on_text: TextCallback | None = None
    ) -> LLMResponse:
        convert = self._convert
        system, contents = convert.to_contents(request.messages, model=request.model)
        params: dict[str, Any] = {
            "model": request.model,
            "contents": contents,
            "config": convert.to_config(request, system),
        }
        assembler = convert.ResponseAssembler(seed=convert.fingerprint(request))
        try:
            if stream:
                await self._stream(params, assembler, on_text)
            else:
                assembler.add(await self._client.aio.models.generate_content(**params))
        except ProviderError:
            raise
        except self._errors.APIError as exc:
            raise self._status_error(exc) from exc
        except self._transport_errors as exc:  # refused, reset, timed out, stream cut
            reason = ": ".join(filter(None, [type(exc).__name__, str(exc)]))  # timeouts say nothing
            raise connection_error(
                f"cannot reach {self.base_url}: {reason}", endpoint=self.base_url
            ) from exc
        return self._result(assembler)

    async def _stream(
        self, params: dict[str, Any], assembler: ResponseAssembler, on_text: TextCallback | None
    ) -> None:
        chunks = await self._client.aio.models.generate_content_stream(**params)
        try:
            async for chunk in chunks:
                for text in assembler.add(chunk):
                    if on_text is not None:
                        await maybe_await(on_text(text))
        except self._errors.UnknownApiResponseError as exc:
            # The SDK parses whatever was left when the body ended: an event cut in half.
            raise incomplete_stream(endpoint=self.base_url, missing="the end of an event") from exc
        finally:  # a failing callback must not leave the response open
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        if not assembler.finished and not assembler.blocked:  # a refusal has no candidate
            raise incomplete_stream(endpoint=self.base_url, missing="a finishReason")

    def _result(self, assembler: ResponseAssembler) -> LLMResponse:
        response = assembler.response()
        if assembler.blocked and not response.content and not response.tool_calls:
            raise ProviderResponseError(
                masked(f"{self.base_url} refused the prompt: {assembler.blocked}"),
                status=200,
                body=masked(assembler.blocked),
            )
        return response

    def _status_error(self, exc: genai_errors.APIError) -> ProviderResponseError:
        detail = masked(str(exc.message or exc.status or exc))
        raw = getattr(exc.response, "headers", None)
        headers = dict(raw) if raw is not None else None
        if exc.code == 400 and _is_key_rejected(exc):
            return ProviderResponseError(
                f"{self.base_url} rejected the API key ({exc.code}): {detail};"
                f" check ${self.api_key_env}",
                status=exc.code,
                body=detail,
            )
        return response_error(
            endpoint=self.base_url,
            status=exc.code,
            detail=detail,
            api_key_env=self.api_key_env,
            headers=headers,
        )
