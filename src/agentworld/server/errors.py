"""Every refusal as ``{"error": {"code", "message"}}`` with the status that says why (SPEC §3.1).

Our exception tree maps onto statuses here, in one place: a person's mistake is a 4xx naming
it, never a 500; a failure of the machinery is a 5xx with a one-line reason, logged in full. A
database that cannot be reached is 503 with ``Retry-After``, logged in one line: the same
request succeeds once the database is back.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic.alias_generators import to_camel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount
from starlette.staticfiles import StaticFiles

from agentworld.errors import (
    AgentWorldError,
    AlreadyExistsError,
    BusyError,
    InvalidArgumentsError,
    NotEditableError,
    NotFoundError,
    PolicyDeniedError,
    ProviderError,
    StorageError,
    UserError,
)
from agentworld.models.text import escape_surrogates
from agentworld.server.responses import JSONResponse

logger = logging.getLogger("agentworld.server")

ErrorCode = Literal[
    "bad_request",
    "invalid_input",
    "validation_error",
    "unauthorized",
    "forbidden",
    "denied_by_policy",
    "not_found",
    "method_not_allowed",
    "already_exists",
    "conflict",
    "too_large",
    "unsupported_media_type",
    "provider_error",
    "storage_error",
    "internal_error",
]


class ApiError(Exception):
    """A refusal a route decides itself (409 for an approval answered already, …)."""

    def __init__(self, status: int, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


MAX_MESSAGE = 2000
"""The longest error message sent, in characters."""
MAX_WORD = 200
"""The longest run without a space shown whole: a message may quote what it refuses, and a
10,000-character name need not come back in full to be recognised."""
_LONG_WORD = re.compile(rf"\S{{{MAX_WORD + 1},}}")


def _shortened(found: re.Match[str]) -> str:
    word = found.group()
    return f"{word[: MAX_WORD // 2]}…({len(word) - MAX_WORD // 2} more characters)"


def brief(message: str) -> str:
    """``message`` as sent: long quotes of the input cut, lone surrogates escaped (a message
    may quote input that holds one), at most ``MAX_MESSAGE`` characters."""
    shown = _LONG_WORD.sub(_shortened, escape_surrogates(message))
    return shown if len(shown) <= MAX_MESSAGE else f"{shown[:MAX_MESSAGE]}…"


def error_response(
    status: int, code: str, message: str, *, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": brief(message)}}, status_code=status, headers=headers
    )


RETRY_AFTER_SECONDS = 2
"""What a 503 asks the client to wait before trying again (``Retry-After``)."""

_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> list[str]:
    """Every method the app takes at the request's path, for the ``Allow`` header a 405 must
    carry (RFC 9110). The router names only the first route whose path matched, and
    ``/api/worlds/{w}`` is three routes (GET, PATCH, DELETE), so each method is tried on every
    route (routers included in routers answer for theirs). The web UI's files take GET and
    HEAD, as ``StaticFiles`` does; a mount takes any method at its prefix, so it is not asked."""
    scope = request.scope
    found: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Mount):
            if isinstance(route.app, StaticFiles) and route.matches(scope)[0] is not Match.NONE:
                found |= {"GET", "HEAD"}
            continue
        found |= {m for m in _METHODS if route.matches({**scope, "method": m})[0] is Match.FULL}
    return [m for m in _METHODS if m in found]


_HTTP_CODES: dict[int, ErrorCode] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "validation_error",
}


def status_of(exc: AgentWorldError) -> tuple[int, ErrorCode]:
    match exc:
        case NotFoundError():
            return 404, "not_found"
        case AlreadyExistsError():
            return 409, "already_exists"
        case BusyError():
            return 409, "conflict"
        case InvalidArgumentsError():
            return 422, "invalid_input"  # a tool call's arguments a person gave (SPEC F2)
        case NotEditableError():
            return 422, "invalid_input"  # an edit of a message that is not a person's (K2)
        case PolicyDeniedError():
            return 403, "denied_by_policy"
        case UserError():
            return 400, "invalid_input"
        case ProviderError():
            return 502, "provider_error"
        case StorageError():
            return 503, "storage_error"
        case _:
            return 500, "internal_error"


_SETTING_NAMED = re.compile(r"(^|; )([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?=: )")


def json_field_names(message: str) -> str:
    """A refusal as the HTTP API's clients read it: the settings it names at the start of each
    of its parts (``turn_limit: …; max_tokens: …``, as ``settings_checks`` names them) in the
    camelCase the bodies use (``turnLimit: …``), as the CLI puts ``--turn-limit`` there."""
    return _SETTING_NAMED.sub(lambda m: m.group(1) + to_camel(m.group(2)), message)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message)

    @app.exception_handler(AgentWorldError)
    async def agentworld_error(request: Request, exc: AgentWorldError) -> JSONResponse:
        status, code = status_of(exc)
        message = " ".join(str(exc).split())
        headers: dict[str, str] = {}
        if isinstance(exc, StorageError):
            logger.error("%s %s failed: %s", request.method, request.url.path, message)
            headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        elif status >= 500:
            logger.error("%s %s failed: %s", request.method, request.url.path, exc, exc_info=exc)
        if isinstance(exc, UserError):
            message = json_field_names(message)
        return error_response(status, code, message, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
            parts.append(f"{where}: {error.get('msg', 'invalid')}")
        return error_response(422, "validation_error", "; ".join(parts) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and isinstance(exc.__cause__, UnicodeError):
            # FastAPI's answer to a body its JSON reading could not decode (bytes that are no
            # UTF-8, nor the UTF-16 or -32 that ``json.loads`` also reads): not JSON, as a
            # malformed one is, so the same 422.
            return error_response(422, "validation_error", "body: not JSON text (it is not valid UTF-8)")
        code = _HTTP_CODES.get(exc.status_code, "bad_request" if exc.status_code < 500 else "internal_error")
        headers = dict(exc.headers or {})
        if exc.status_code == 405 and (methods := allowed_methods(request)):
            headers["Allow"] = ", ".join(methods)
        return error_response(exc.status_code, code, str(exc.detail), headers=headers)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return error_response(500, "internal_error", f"unexpected {type(exc).__name__}; see the server log")
