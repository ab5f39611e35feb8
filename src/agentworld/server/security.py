"""The guard every request passes before any route runs: ``Host``, where a state-changing
request comes from, the token, body size and content type. A pure ASGI middleware, so it
covers the event stream as well as JSON routes, and refuses with the API's error document
(``{"error": {"code", "message"}}``).

The browser's ``EventSource`` cannot send an ``Authorization`` header, so ``/login?token=T``
sets an HttpOnly, ``SameSite=Strict`` cookie that stands for the token. ``SameSite`` does not
tell ports apart (every port of 127.0.0.1 is the same site, and the browser sends the cookie to
all of them), so the cookie is this port's: its name carries the port the server listens on
and its value is derived from the token and that port; a server on another port, even with
the same token, accepts neither. Requests from pages of other origins are refused
(``cross_site``, SPEC §7.1 C5), and bodies must be JSON.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from agentworld.server.config import ServerConfig
from agentworld.server.cross_site import (
    STATE_CHANGING,
    Origin,
    cross_site_problem,
    is_json,
    parse_origin,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE_PREFIX = "agentworld_session_"
LOGIN_PATH = "/login"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_ENCODED_SLASH = b"%2f"


def cookie_name(port: int) -> str:
    """The login cookie of the server listening on ``port`` (``agentworld_session_8080``)."""
    return f"{COOKIE_PREFIX}{port}"


def session_value(token: str, port: int) -> str:
    """What the login cookie of the server on ``port`` holds: derived from the token and the
    port, so the cookie is not the token and is worth nothing to a server on another port."""
    return hmac.new(token.encode(), f"agentworld-session:{port}".encode(), hashlib.sha256).hexdigest()


async def send_error(send: Send, status: int, code: str, message: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _world_file(scope: Scope, headers: dict[str, str]) -> bool:
    """A world file posted to the apply route: the one body that is TOML, not JSON. A page of
    another site cannot send it without a preflight (the type is not one a form sends), and
    the cross-site check before this one already refused any request with a foreign Origin."""
    media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return scope["method"] == "POST" and scope["path"] == "/api/worlds/apply" and media == "application/toml"


class Guard:
    """Refuses, in this order: a ``Host`` that is not this server (400), a state-changing
    request from a page of another origin (403 ``cross_site``), a request without the token
    when one is set (401), a path with an encoded '/' in a segment (404), a body over the limit
    (413), a body that is not JSON (415)."""

    def __init__(self, app: ASGIApp, config: ServerConfig) -> None:
        self.app = app
        self.config = config
        self._trusted: frozenset[Origin] = frozenset(
            o for o in (parse_origin(value) for value in config.cors_origins) if o is not None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not self.config.host_allowed(headers.get("host", "")):
            await send_error(send, 400, "bad_host", "the Host header does not name this server")
            return
        if scope["method"] in STATE_CHANGING:
            length = headers.get("content-length")
            has_body = (length is not None and length != "0") or (length is None and "transfer-encoding" in headers)
            problem = cross_site_problem(
                scope["method"], scope.get("scheme", "http"), headers, self._trusted, has_body=has_body
            )
            if problem is not None:
                await send_error(send, 403, "cross_site", f"refused: {problem}")
                return
        if scope["path"] == LOGIN_PATH:
            await self._login(scope, send)
            return
        if self.config.token and not self._authorized(headers, _port(scope, self.config)):
            await send_error(
                send, 401, "unauthorized", "this server needs its token: Authorization: Bearer T",
                [(b"www-authenticate", b'Bearer realm="agentworld"')],
            )
            return
        if _ENCODED_SLASH in scope.get("raw_path", b"").lower():
            # The server decodes %2F before routing, so /api/worlds/w3%2Fagents would answer as
            # w3's agent list. No name or id of ours holds a '/', so no such thing exists.
            await send_error(send, 404, "not_found", "no name or id holds '/' (it was sent as %2F)")
            return
        if scope["method"] in _BODY_METHODS:
            length = headers.get("content-length")
            chunked = length is None and "transfer-encoding" in headers
            has_body = (length is not None and length != "0") or chunked
            if has_body and not is_json(headers.get("content-type", "")) and not _world_file(scope, headers):
                await send_error(
                    send, 415, "unsupported_media_type",
                    "the body must be JSON (Content-Type: application/json)",
                )
                return
            if length is not None and (not length.isdigit() or int(length) > self.config.max_body_bytes):
                await send_error(send, 413, "too_large", f"the body is over {self.config.max_body_bytes} bytes")
                return
            if chunked:
                body = await self._read_body(receive)
                if body is None:
                    await send_error(send, 413, "too_large", f"the body is over {self.config.max_body_bytes} bytes")
                    return
                receive = _replay(body, receive)
        await self.app(scope, receive, send)

    def _authorized(self, headers: dict[str, str], port: int) -> bool:
        token = self.config.token
        assert token is not None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
            return True
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is no credential
            return False
        found = cookie.get(cookie_name(port))
        return found is not None and hmac.compare_digest(found.value.encode(), session_value(token, port).encode())

    async def _login(self, scope: Scope, send: Send) -> None:
        """``GET /login?token=T``: the browser gets the session cookie and goes to ``/docs``."""
        if self.config.token is None:
            await _redirect(send, [])
            return
        given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), self.config.token.encode()):
            await send_error(send, 401, "unauthorized", "wrong or missing token")
            return
        port = _port(scope, self.config)
        cookie = f"{cookie_name(port)}={session_value(self.config.token, port)}; HttpOnly; SameSite=Strict; Path=/"
        await _redirect(send, [(b"set-cookie", cookie.encode())])

    async def _read_body(self, receive: Receive) -> bytes | None:
        """A body sent without ``Content-Length``, read whole; None once it is over the limit."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.config.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body read already, then what the client sends next."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _port(scope: Scope, config: ServerConfig) -> int:
    """The port this request came in on (the socket's, not the ``Host`` header's, which a
    client chooses), or the configured one when the server runs on a Unix socket."""
    server = scope.get("server")
    if server and isinstance(server[1], int):
        return server[1]
    return config.port


async def _redirect(send: Send, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", b"/"), (b"content-length", b"0"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": b""})
