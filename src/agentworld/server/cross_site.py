"""Whether a state-changing request came from a page of another origin (SPEC §7.1 C5).

A page of any site may make the browser send a POST (a form, ``fetch`` in ``no-cors`` mode,
with or without a body) to a server on this machine; CORS only hides the answer, the work is
done. So every request that changes something (POST, PUT, PATCH, DELETE) is refused when the
browser says it came from elsewhere: an ``Origin`` that is not this server's own (scheme, host
and port as the browser addressed it) nor one named by ``--cors-origin``, or a
``Sec-Fetch-Site`` of ``cross-site``/``same-site`` (another port of the same host is the same
*site* but another *origin*). A request shaped like a browser's (``Sec-Fetch-*`` headers, or a
``Content-Type`` that is not JSON) without an ``Origin`` is refused too. Other clients (the
CLI, curl, scripts: no ``Origin``, no ``Sec-Fetch-*``, a JSON body or none) pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_OTHER_SITES = frozenset({"cross-site", "same-site"})

Origin = tuple[str, str, int]
"""(scheme, host, port), lower case, with the scheme's default port filled in."""


def parse_origin(value: str) -> Origin | None:
    """``http://127.0.0.1:8080`` → ``("http", "127.0.0.1", 8080)``; None for what is not a
    ``scheme://host[:port]`` origin (``null``, a path, an unknown scheme)."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.query or parts.fragment or parts.username is not None:
        return None
    return scheme, parts.hostname.lower(), port if port is not None else _DEFAULT_PORTS[scheme]


def own_origin(scheme: str, host_header: str) -> Origin | None:
    """This server's origin as the browser sees it: the request's scheme and its ``Host``."""
    if not host_header or any(c in host_header for c in "/?#@ "):
        return None
    return parse_origin(f"{scheme}://{host_header}")


def cross_site_problem(
    method: str,
    scheme: str,
    headers: Mapping[str, str],
    trusted: frozenset[Origin] = frozenset(),
    *,
    has_body: bool = False,
) -> str | None:
    """Why this request must be refused as cross-site, or None. ``headers`` has lower-case
    names; ``trusted`` are the ``--cors-origin`` origins the operator named. A non-JSON body
    sent without any browser header is left to the media-type check (415), which refuses it
    as it always has."""
    if method.upper() not in STATE_CHANGING:
        return None
    origin_header = headers.get("origin")
    fetch_site = headers.get("sec-fetch-site", "").strip().lower()
    if origin_header is not None:
        origin = parse_origin(origin_header)
        if origin is None:
            return f"the request comes from an opaque or malformed origin ({origin_header.strip()[:60]!r})"
        if origin in trusted:
            return None
        if origin != own_origin(scheme, headers.get("host", "")):
            return f"the request comes from another origin ({origin_header.strip()[:80]}), not this server's page"
        if fetch_site in _OTHER_SITES:
            return f"the browser says the request comes from another site (Sec-Fetch-Site: {fetch_site})"
        return None
    if fetch_site in _OTHER_SITES:
        return f"the browser says the request comes from another site (Sec-Fetch-Site: {fetch_site})"
    if any(name.startswith("sec-fetch-") for name in headers):
        return "a browser's request without an Origin header"
    content_type = headers.get("content-type")
    if content_type is not None and not is_json(content_type) and not has_body:
        return f"a request without an Origin header whose Content-Type is {content_type.split(';', 1)[0].strip()[:60]!r}, not JSON"
    return None


def is_json(content_type: str) -> bool:
    """``application/json`` or ``application/*+json``, parameters ignored."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))
