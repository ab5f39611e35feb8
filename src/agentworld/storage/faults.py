"""A database that cannot be reached, said in one line.

Whatever the driver raises when the server refuses, resets, drops or never answers a
connection -- the socket's ``OSError``, a ``TimeoutError``, asyncpg's own errors, or
SQLAlchemy's ``DBAPIError`` wrapping any of them -- ``unavailable`` turns into a
``StorageError`` naming the server (never the user or password) and what happened, so the
HTTP API answers 503 and the CLI prints one line. ``connect_options`` gives PostgreSQL
connections a connect timeout, so a server that accepts and never answers ends in that line
too instead of a hang.
"""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import urlsplit

from agentworld.errors import InvalidInputError, StorageUnavailable

CONNECT_TIMEOUT_SECONDS = 5.0
"""How long a PostgreSQL connection may take to open, unless the URL says (``?timeout=S``)."""

_TIMEOUT_OPTIONS = ("timeout", "command_timeout")
"""asyncpg's timeouts, which a URL may set in seconds (``?timeout=10&command_timeout=60``)."""


def server_of(url: str) -> str:
    """``host:port/database`` of a server URL, without its user name or password."""
    parts = urlsplit(url)
    where = parts.hostname or "localhost"
    if parts.port:
        where += f":{parts.port}"
    return where + parts.path


def connect_options(url: str) -> tuple[str, dict[str, float]]:
    """The URL without the timeouts it may name, and those as asyncpg's ``connect``
    arguments in seconds, the connect timeout ``CONNECT_TIMEOUT_SECONDS`` when not named."""
    import sqlalchemy as sa

    parsed = sa.make_url(url)
    options: dict[str, float] = {"timeout": CONNECT_TIMEOUT_SECONDS}
    for name in _TIMEOUT_OPTIONS:
        value = parsed.query.get(name)
        if value is None:
            continue
        try:
            seconds = float(value if isinstance(value, str) else value[-1])
        except ValueError:
            seconds = -1.0
        if not seconds > 0 or seconds == float("inf"):
            raise InvalidInputError(f"--db: {name} must be a number of seconds above 0")
        options[name] = seconds
    stripped = parsed.difference_update_query(_TIMEOUT_OPTIONS)
    return stripped.render_as_string(hide_password=False), options


def connect_timeout(url: str) -> float:
    """The connect timeout of a PostgreSQL URL (``connect_options``)."""
    try:
        return connect_options(url)[1]["timeout"]
    except (InvalidInputError, ValueError):
        return CONNECT_TIMEOUT_SECONDS


def unavailable(exc: BaseException, url: str) -> StorageUnavailable | None:
    """The one-line ``StorageError`` for ``exc`` when it says the database server could not be
    reached or was lost (None for any other error: a refused row, a bad statement, and every
    error on SQLite, whose driver says what went wrong with the file itself)."""
    if url.startswith("sqlite"):
        return None
    server = server_of(url)
    found = _cause(exc)
    if found is None:
        return None
    if isinstance(found, TimeoutError):
        seconds = f"{connect_timeout(url):g}"
        return StorageUnavailable(f"no answer from the database server at {server} within {seconds} s")
    if isinstance(found, ConnectionRefusedError):
        return StorageUnavailable(f"cannot reach the database server at {server}: connection refused")
    if isinstance(found, OSError) or not _said_by_server(found):
        reason = getattr(found, "strerror", None) or " ".join(str(found).split())
        what = "lost the connection to" if _lost(found) else "cannot reach"
        return StorageUnavailable(f"{what} the database server at {server}: "
                            f"{reason or type(found).__name__}")
    reason = " ".join(str(found).split()) or type(found).__name__
    return StorageUnavailable(f"database server at {server}: {reason}")


def _cause(exc: BaseException) -> BaseException | None:
    """The error in ``exc``'s chain (SQLAlchemy's ``orig``, the driver's ``__cause__``) that says
    the connection failed, or None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    invalidated = False
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError | TimeoutError) or _asyncpg_connection_error(current):
            return current
        invalidated = invalidated or bool(getattr(current, "connection_invalidated", False))
        orig: Any = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__
    if invalidated:  # SQLAlchemy saw the connection gone, whatever the driver called it
        return ConnectionAbortedError(_driver_line(exc))
    return None


def _lost(exc: BaseException) -> bool:
    """A connection that was open and broke (as against one that never opened: no such host,
    no route)."""
    return isinstance(exc, ConnectionResetError | ConnectionAbortedError | BrokenPipeError) or (
        not isinstance(exc, OSError)
    )


def _said_by_server(exc: BaseException) -> bool:
    """An error the server sent (shutting down, too many connections, a wrong password), as
    against one the client saw (the connection closed under it)."""
    asyncpg_errors = sys.modules.get("asyncpg.exceptions")
    if asyncpg_errors is None or isinstance(exc, asyncpg_errors.ConnectionDoesNotExistError):
        return False
    return isinstance(exc, asyncpg_errors.PostgresError)


def _asyncpg_connection_error(exc: BaseException) -> bool:
    """asyncpg's errors for a connection that failed or was refused: connection exceptions
    (class 08), the server shutting down or starting up (57P), too many connections, a wrong
    password or database, and its own "connection is closed"."""
    asyncpg_errors = sys.modules.get("asyncpg.exceptions")
    if asyncpg_errors is None or not type(exc).__module__.startswith("asyncpg"):
        return False
    refused = (
        asyncpg_errors.PostgresConnectionError,
        asyncpg_errors.OperatorInterventionError,
        asyncpg_errors.InsufficientResourcesError,
        asyncpg_errors.InvalidAuthorizationSpecificationError,
        asyncpg_errors.InvalidCatalogNameError,
        asyncpg_errors.ConnectionRejectionError,
    )
    if isinstance(exc, refused):
        return True
    return isinstance(exc, asyncpg_errors.InterfaceError) and "closed" in str(exc)


def _driver_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    shown = orig if isinstance(orig, BaseException) else exc
    return " ".join(str(shown).split()) or type(shown).__name__
