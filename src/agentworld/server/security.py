"""The guard every request passes before any route runs: body size, ``Host``, content type and
the token. A pure ASGI middleware, so it covers the event stream as well as JSON routes, and
refuses with the API's error document (``{"error": {"code", "message"}}``).

The browser's ``EventSource`` cannot send an ``Authorization`` header, so ``/login?token=T``
sets an HttpOnly, ``SameSite=Strict`` cookie that stands for the token: another site can
neither read it nor make the browser send it. Bodies must be JSON: the requests a page of
another site may send without asking (forms, ``text/plain``) are refused before they are read.
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

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "agentworld_session"
LOGIN_PATH = "/login"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_ENCODED_SLASH = b"%2f"


def session_value(token: str) -> str:
    """What the login cookie holds: derived from the token, so the cookie is not the token."""
    return hmac.new(token.encode(), b"agentworld-session", hashlib.sha256).hexdigest()


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


class Guard:
    """Refuses, in this order: a ``Host`` that is not this server (400), a request without the
    token when one is set (401), a path with an encoded '/' in a segment (404), a body over the
    limit (413), a body that is not JSON (415)."""

    def __init__(self, app: ASGIApp, config: ServerConfig) -> None:
        self.app = app
        self.config = config
        self._session = session_value(config.token) if config.token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not self.config.host_allowed(headers.get("host", "")):
            await send_error(send, 400, "bad_host", "the Host header does not name this server")
            return
        if scope["path"] == LOGIN_PATH:
            await self._login(scope, send)
            return
        if self.config.token and not self._authorized(headers):
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
            if has_body and not _is_json(headers.get("content-type", "")):
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

    def _authorized(self, headers: dict[str, str]) -> bool:
        token = self.config.token
        assert token is not None and self._session is not None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
            return True
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is no credential
            return False
        found = cookie.get(COOKIE)
        return found is not None and hmac.compare_digest(found.value.encode(), self._session.encode())

    async def _login(self, scope: Scope, send: Send) -> None:
        """``GET /login?token=T``: the browser gets the session cookie and goes to ``/docs``."""
        if self.config.token is None or self._session is None:
            await _redirect(send, [])
            return
        given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0]
        if not hmac.compare_digest(given.encode(), self.config.token.encode()):
            await send_error(send, 401, "unauthorized", "wrong or missing token")
            return
        cookie = f"{COOKIE}={self._session}; HttpOnly; SameSite=Strict; Path=/"
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


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def _redirect(send: Send, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", b"/"), (b"content-length", b"0"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": b""})
