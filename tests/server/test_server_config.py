"""What ``agentworld serve`` refuses before anything listens: ``--cors-origin`` and
``--allowed-host`` values that would match nothing (a trailing slash, a port, a URL), and
``--cors-origin *``, which with the login cookie would let every web page call the API."""

from __future__ import annotations

import pytest

from agentworld.errors import InvalidInputError
from agentworld.server.config import ServerConfig, host_name_problem, origin_problem


@pytest.mark.parametrize(
    "origin", ["http://localhost:3000", "https://app.example.org", "http://[::1]:8080", "http://10.0.0.2"]
)
def test_an_origin_as_a_browser_sends_it_is_accepted(origin: str) -> None:
    assert origin_problem(origin) is None
    ServerConfig(cors_origins=(origin,)).check()


@pytest.mark.parametrize(
    ("origin", "said"),
    [
        ("*", "any origin is refused"),
        ("https://app.example.org/", "no path, not even a trailing /"),
        ("https://app.example.org/ui", "no path"),
        ("app.example.org", "not an http:// or https:// origin"),
        ("ftp://app.example.org", "not an http:// or https:// origin"),
        ("null", "not an http:// or https:// origin"),
        ("http://user:pw@app.example.org", "no user name or password"),
        ("http://app.example.org:99999", "is not an origin"),
        ("http://app.example.org:", "is not an origin"),
        ("HTTPS://App.example.org", "lower case"),
        ("http://bad host", "its host is not a host name"),
    ],
)
def test_an_origin_that_would_match_no_page_or_every_page_is_refused(origin: str, said: str) -> None:
    problem = origin_problem(origin)
    assert problem is not None and said in problem
    with pytest.raises(InvalidInputError, match=r"^--cors-origin "):
        ServerConfig(cors_origins=("http://localhost:3000", origin)).check()


@pytest.mark.parametrize("name", ["app.example.org", "app.example.org.", "10.0.0.2", "2001:db8::1", "[2001:db8::1]"])
def test_a_host_name_or_an_address_is_accepted_and_matches_its_host_header(name: str) -> None:
    config = ServerConfig(host="0.0.0.0", token="t" * 16, allowed_hosts=(name,))
    config.check()
    bare = name.strip("[]")
    header = f"[{bare}]:8080" if ":" in bare else f"{bare}:8080"
    assert config.host_allowed(header)
    assert not config.host_allowed("elsewhere.example.org")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("*", "wildcards are not accepted"),
        ("app.example.org:8080", "without a port"),
        ("https://app.example.org", "not a URL"),
        ("bad_host", "not a host name"),
        ("-app.example.org", "not a host name"),
        ("", "not a host name"),
    ],
)
def test_a_host_that_no_host_header_could_match_is_refused(name: str, said: str) -> None:
    problem = host_name_problem(name)
    assert problem is not None and said in problem
    with pytest.raises(InvalidInputError, match=r"^--allowed-host "):
        ServerConfig(allowed_hosts=(name,)).check()
