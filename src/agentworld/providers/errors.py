"""Turning an SDK's HTTP error into our ``ProviderResponseError``, the same way for every SDK."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

from agentworld.errors import ProviderResponseError

MAX_RETRY_AFTER = 60.0


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
    """A one-line, actionable message: 401/403 say which env var holds the key."""
    if status in (401, 403):
        message = f"{endpoint} rejected the API key ({status}): {detail}; check ${api_key_env}"
    else:
        message = f"{endpoint} answered {status}: {detail}"
    return ProviderResponseError(
        message, status=status, body=detail, retry_after=retry_after_seconds(headers)
    )
