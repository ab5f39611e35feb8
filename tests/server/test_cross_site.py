"""The cross-site rule itself (SPEC §7.1 C5), as a pure function of the method, the scheme and
the headers: which requests a page of another origin could make are refused, and which the
server's own page and non-browser clients make are not. The real server is tried with the same
shapes in ``test_security.py`` and from a real page in ``tests/webui/test_cross_site_pages.py``."""

from __future__ import annotations

import pytest

from agentworld.server.cross_site import cross_site_problem, parse_origin

HOST = "127.0.0.1:8080"


def problem(
    method: str,
    scheme: str = "http",
    *,
    given: dict[str, str] | None = None,
    has_body: bool = False,
    trusted: tuple[str, ...] = (),
    **headers: str,
) -> str | None:
    named = {k.replace("_", "-").lower(): v for k, v in {**(given or {}), **headers}.items()}
    named.setdefault("host", HOST)
    origins = frozenset(o for o in (parse_origin(t) for t in trusted) if o is not None)
    return cross_site_problem(method, scheme, named, origins, has_body=has_body)


@pytest.mark.parametrize(
    ("scheme", "host", "origin"),
    [
        ("http", HOST, "http://127.0.0.1:8080"),
        ("http", "127.0.0.1", "http://127.0.0.1"),  # the default port, written or not
        ("http", "127.0.0.1:80", "http://127.0.0.1"),
        ("https", "agents.example.org", "https://agents.example.org:443"),
        ("http", "[::1]:8080", "http://[::1]:8080"),
        ("http", "LocalHost:8080", "http://localhost:8080"),
    ],
)
def test_the_servers_own_origin_may_change_state(scheme: str, host: str, origin: str) -> None:
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert problem(method, scheme, origin=origin, host=host, sec_fetch_site="same-origin") is None


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://127.0.0.1:8081"},
        {"origin": "https://127.0.0.1:8080"},  # another scheme is another origin
        {"origin": "http://localhost:8080"},
        {"origin": "null"},
        {"origin": "http://127.0.0.1:8080/path"},
        {"origin": "http://127.0.0.1:8080", "sec_fetch_site": "same-site"},
        {"origin": "http://127.0.0.1:8080", "sec_fetch_site": "cross-site"},
        {"sec_fetch_site": "cross-site"},
        {"sec_fetch_mode": "no-cors"},
        {"content_type": "text/plain;charset=UTF-8"},
        {"content_type": "multipart/form-data; boundary=x"},
    ],
)
def test_what_a_page_of_another_origin_can_send_is_refused_with_or_without_a_body(headers: dict[str, str]) -> None:
    for method in ("POST", "DELETE", "PATCH"):
        assert problem(method, given=headers) is not None


def test_non_browser_clients_and_reads_pass() -> None:
    assert problem("POST") is None  # curl -X POST, the CLI: no Origin, no body
    assert problem("POST", content_type="application/json", has_body=True) is None
    assert problem("PATCH", content_type="application/merge-patch+json", has_body=True) is None
    # a non-JSON body from a client that is no browser is left to the 415 of the media-type check
    assert problem("POST", content_type="text/plain", has_body=True) is None
    for method in ("GET", "HEAD", "OPTIONS"):
        assert problem(method, origin="https://evil.example", sec_fetch_site="cross-site") is None


def test_an_origin_named_by_cors_origin_may_change_state_and_no_other() -> None:
    trusted = ("http://127.0.0.1:5173",)
    assert problem("POST", trusted=trusted, origin="http://127.0.0.1:5173", sec_fetch_site="same-site") is None
    assert problem("POST", trusted=trusted, origin="http://127.0.0.1:5174", sec_fetch_site="same-site") is not None
    assert problem("POST", trusted=trusted, sec_fetch_site="same-site") is not None  # no Origin: which page?
