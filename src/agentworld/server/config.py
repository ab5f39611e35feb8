"""How a server is set up: where it listens, who may call it, and its limits."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from agentworld.errors import InvalidInputError

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})


def is_loopback(host: str) -> bool:
    """Whether an address to listen on is reachable from this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


@dataclass(frozen=True)
class ServerConfig:
    """The server's settings; ``check`` refuses the unsafe ones before anything listens."""

    host: str = "127.0.0.1"
    port: int = 8080
    token: str | None = None
    """Every request must carry it (``Authorization: Bearer``, or the login cookie). Required
    beyond loopback; optional on loopback (then every route needs it too)."""
    allowed_hosts: tuple[str, ...] = ()
    """``Host`` header values accepted besides the loopback names and the bound address. On a
    wildcard address (0.0.0.0, ::) every Host is accepted unless this lists some."""
    cors_origins: tuple[str, ...] = ()
    """Origins a browser may call the API from; none (CORS closed) by default."""
    max_body_bytes: int = 1_048_576
    poll_seconds: float = 0.15
    """How often the event stream looks for events stored by other processes (SQLite; on
    PostgreSQL while the notification connection is down)."""
    safety_poll_seconds: float = 2.0
    """On PostgreSQL, where writers notify the stream, how often it reads the log anyway."""
    keepalive_seconds: float = 15.0
    run_wait_seconds: float = 120.0
    """How long an approval or tool-result answer waits for the world to go idle before it
    answers with what was produced so far (the work goes on)."""

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def check(self) -> None:
        """Refuse to serve beyond loopback without a token (one line, for the command line)."""
        if not self.loopback and not self.token:
            raise InvalidInputError(
                f"--host {self.host} is reachable from other machines: give --token T "
                "(or AGENTWORLD_TOKEN), or --generate-token"
            )
        if self.token is not None and len(self.token) < 16:
            raise InvalidInputError("--token must be at least 16 characters")
        for name in self.allowed_hosts:
            if (problem := host_name_problem(name)) is not None:
                raise InvalidInputError(f"--allowed-host {name!r}: {problem}")
        for origin in self.cors_origins:
            if (problem := origin_problem(origin)) is not None:
                raise InvalidInputError(f"--cors-origin {origin!r}: {problem}")

    def host_allowed(self, header: str) -> bool:
        """Whether a ``Host`` header names this server (DNS rebinding: a page of another site
        whose name was pointed at 127.0.0.1 sends its own name here, and is refused)."""
        name = _host_name(header)
        if name in LOOPBACK_NAMES:
            return True
        allowed = {h.strip("[]").lower() for h in self.allowed_hosts}
        if name in allowed:
            return True
        if self.host in WILDCARD_HOSTS:
            return not allowed
        return name == self.host.strip("[]").lower()


def _host_name(header: str) -> str:
    """``example.org:8080`` → ``example.org``; ``[::1]:8080`` → ``::1``."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


_DNS_NAME = re.compile(r"(?i)^(?!-)[a-z0-9-]{1,63}(?<!-)(?:\.(?!-)[a-z0-9-]{1,63}(?<!-))*\.?$")


def host_name_problem(name: str) -> str | None:
    """Why ``name`` can never match a ``Host`` header as ``--allowed-host``, or None. The
    header's port is not compared, so a value with one (or a URL) would be accepted and then
    match nothing: refused, saying what to write."""
    if name == "*":
        return "wildcards are not accepted: name each host (a server on 0.0.0.0 accepts any Host unless some are listed)"
    if "://" in name or "/" in name:
        return "give a host name (app.example.org), not a URL"
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        ipaddress.ip_address(bare)
        return None
    except ValueError:
        pass
    if ":" in name:
        return "give the host name without a port (the Host header's port is not compared)"
    if len(name) > 253 or not _DNS_NAME.match(name):
        return "is not a host name or an IP address"
    return None


def origin_problem(origin: str) -> str | None:
    """Why ``origin`` cannot be a ``--cors-origin``, or None. A browser sends an origin as
    ``scheme://host[:port]``; anything else would match no page. ``*`` is refused: the API
    accepts the login cookie, so every web page a logged-in person opens could call it."""
    if origin == "*":
        return "any origin is refused: the login cookie would let every web page call the API; name each origin (https://app.example.org)"
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return "is not an origin (scheme://host[:port])"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "is not an http:// or https:// origin (scheme://host[:port])"
    if parts.username is not None or parts.password is not None:
        return "an origin has no user name or password"
    if parts.path or parts.query or parts.fragment or origin.endswith(("?", "#")):
        return "an origin has no path, not even a trailing /: scheme://host[:port]"
    if port is None and parts.netloc.endswith(":"):
        return "is not an origin (scheme://host[:port])"
    if origin != origin.lower():
        return "write it in lower case, as a browser sends it"
    if host_name_problem(parts.hostname) is not None:
        return "is not an origin: its host is not a host name or an IP address"
    return None
