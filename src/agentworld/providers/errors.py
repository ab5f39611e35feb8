"""Turning an SDK's failure into our ``ProviderError``, the same way for every SDK.

HTTP error statuses become ``ProviderResponseError`` (:func:`response_error`); a stream
that ends before its wire format says the answer is complete becomes a dropped
connection (:func:`incomplete_stream`), so ``RetryingProvider`` retries it (SPEC L5); a
transport failure becomes :func:`connection_error`.

Whatever an endpoint or an SDK says goes through :func:`masked` before it becomes an error's
text: an endpoint may quote the key it was sent (``Incorrect API key provided: Bearer sk-…``),
and that text is shown on stderr, stored as a chat line and published as events. The values of
this process's secret variables — an agent's ``--api-key-env`` too — and every known key shape
are masked there, once for every provider.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

from agentworld.errors import ProviderConnectionError, ProviderError, ProviderResponseError
from agentworld.process_secrets import redact_process_text

MAX_RETRY_AFTER = 60.0


def masked(text: str) -> str:
    """``text`` from an endpoint or an SDK with this process's secrets and key shapes masked."""
    return redact_process_text(text)


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Read ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), capped at a minute."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return min(MAX_RETRY_AFTER, max(0.0, float(lowered["retry-after-ms"]) / 1000))
        if "retry-after" in lowered:
            value = lowered["retry-after"]
            try:
                return min(MAX_RETRY_AFTER, max(0.0, float(value)))
            except ValueError:
                parsed = email.utils.parsedate_to_datetime(value)
                return min(MAX_RETRY_AFTER, max(0.0, parsed.timestamp() - time.time()))
    except (TypeError, ValueError):
        return None
    return None


def response_error(
    *,
    endpoint: str,
    status: int,
    detail: str,
    api_key_env: str,
    headers: Mapping[str, str] | None = None,
) -> ProviderResponseError:
    """A one-line, actionable message: 401/403 say which env var holds the key. ``detail``
    (the endpoint's own words) is masked, in the message and in ``body``."""
    detail = masked(detail)
    if status in (401, 403):
        message = f"{endpoint} rejected the API key ({status}): {detail}; check ${api_key_env}"
    else:
        message = f"{endpoint} answered {status}: {detail}"
    return ProviderResponseError(
        message, status=status, body=detail, retry_after=retry_after_seconds(headers)
    )


def incomplete_stream(*, endpoint: str, missing: str) -> ProviderConnectionError:
    """A stream that ended before ``missing`` (the provider's "complete" marker) arrived.

    However cleanly the connection closed, the answer is cut short, so it is treated
    exactly as a dropped connection: retryable, and never returned as an answer. The
    text already streamed for this attempt is void; ``retry_listener`` tells the
    streaming consumer before the next attempt starts.
    """
    return ProviderConnectionError(
        masked(f"lost the connection to {endpoint}: the stream ended before {missing}"),
        url=endpoint,
    )


def connection_error(message: str, *, endpoint: str) -> ProviderConnectionError:
    """The endpoint could not be reached; ``message`` (with the SDK's words) is masked."""
    return ProviderConnectionError(masked(message), url=endpoint)


_NEVER_BETTER_ON_RETRY = frozenset(
    {"UnsupportedProtocol", "LocalProtocolError", "TooManyRedirects"}
)
"""Transport failures that a second attempt would meet again: a redirect to ``https://`` on a
plain-HTTP client, a header that cannot be sent, a redirect loop."""


def transport_error(exc: BaseException, *, endpoint: str) -> ProviderConnectionError:
    """The SDK says "Connection error." for every transport failure; its cause says which one
    (see :func:`transport_failure`)."""
    cause = exc.__cause__ or exc.__context__
    if cause is None:
        return connection_error(f"cannot reach {endpoint}: {exc}", endpoint=endpoint)
    return transport_failure(cause, said=str(exc), endpoint=endpoint)


def transport_failure(failure: BaseException, *, said: str, endpoint: str) -> ProviderConnectionError:
    """A request that failed in the HTTP client with ``failure``; ``said`` is the words for it
    when it has none. The message carries which failure it was (a refused connection, a
    malformed answer, a redirect it may not follow): an answer that could not be read is said
    as such, not as an endpoint that could not be reached; failures a retry cannot mend are not
    retried."""
    detail = str(failure) or said
    kinds = {kind.__name__ for kind in type(failure).__mro__}
    if "RemoteProtocolError" in kinds:
        error = connection_error(
            f"{endpoint} sent an answer that cannot be read: {detail}", endpoint=endpoint
        )
    elif kinds & _NEVER_BETTER_ON_RETRY:
        error = connection_error(f"cannot use {endpoint}: {detail}", endpoint=endpoint)
        error.retryable = False
    else:
        error = connection_error(f"cannot reach {endpoint}: {detail}", endpoint=endpoint)
    return error


def unreadable_body(exc: Exception, *, endpoint: str) -> ProviderResponseError:
    """A ``200`` whose body (or one streamed event) is not JSON at all."""
    return ProviderResponseError(
        masked(f"{endpoint} returned a body that is not valid JSON ({exc})"), status=200
    )


class ModelDeadlineError(ProviderError):
    """A model call that outlasted its deadline, retries and waits included; not retried (the
    deadline is for the call as a whole)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the model did not answer within {seconds:g} s (modelDeadlineSeconds)")
        self.seconds = seconds
