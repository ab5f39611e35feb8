"""Who may call the server (issue acceptance 5): loopback by default; beyond it a token or no
start at all; the Host header checked; CORS closed; bodies limited and JSON only."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from http_harness import Served, free_port, server_env, start_server

TOKEN = "s3cret-token-for-tests-0123"


def test_beyond_loopback_without_a_token_it_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    started = subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", f"sqlite:///{tmp_path / 'a.db'}", "serve",
         "--host", "0.0.0.0", "--port", str(free_port())],
        env=server_env(tmp_path), capture_output=True, text=True, timeout=30,
    )
    assert started.returncode != 0
    assert started.stderr.count("\n") == 1 and started.stderr.startswith("error: ")
    assert "--token" in started.stderr


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Bound to every address, with a token (only loopback traffic is sent to it)."""
    home = tmp_path_factory.mktemp("guarded")
    running = start_server(f"sqlite:///{home / 'a.db'}", home, token=TOKEN, host="0.0.0.0")
    yield running
    running.stop()


def test_with_a_token_every_route_needs_it(guarded: Served) -> None:
    for path in ("/health", "/api/worlds", "/api/worlds/x/events", "/openapi.json"):
        refused = httpx.get(guarded.base_url + path)
        assert refused.status_code == 401, path
        assert refused.json()["error"]["code"] == "unauthorized"
    wrong = httpx.get(f"{guarded.base_url}/api/worlds", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    with guarded.client() as api:
        assert api.get("/api/worlds").json() == {"worlds": []}


def test_the_login_url_sets_a_cookie_the_event_stream_accepts(guarded: Served) -> None:
    with httpx.Client(base_url=guarded.base_url) as browser:
        assert browser.get("/login", params={"token": "wrong"}).status_code == 401
        login = browser.get("/login", params={"token": TOKEN})
        assert login.status_code == 303 and login.headers["location"] == "/"  # the web UI
        cookie = login.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN not in cookie
        assert browser.get("/api/worlds").status_code == 200  # the cookie stands for the token


def test_a_host_that_is_not_this_server_is_refused(served: Served) -> None:
    rebound = httpx.get(f"{served.base_url}/api/worlds", headers={"Host": "evil.example:8080"})
    assert rebound.status_code == 400 and rebound.json()["error"]["code"] == "bad_host"
    for host in ("localhost:1234", "127.0.0.1", "[::1]:80"):
        assert httpx.get(f"{served.base_url}/health", headers={"Host": host}).status_code == 200


def test_cors_is_closed(served: Served) -> None:
    answer = httpx.get(f"{served.base_url}/api/worlds", headers={"Origin": "https://elsewhere.example"})
    assert "access-control-allow-origin" not in answer.headers
    preflight = httpx.options(
        f"{served.base_url}/api/worlds",
        headers={"Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in preflight.headers


def test_bodies_are_limited_and_must_be_json(served: Served, api: httpx.Client) -> None:
    big = api.post("/api/worlds", content=b'{"name": "' + b"x" * 2_000_000 + b'"}',
                   headers={"Content-Type": "application/json"})
    assert big.status_code == 413 and big.json()["error"]["code"] == "too_large"
    chunked = api.post("/api/worlds", content=iter([b'{"name": "', b"x" * 2_000_000, b'"}']),
                       headers={"Content-Type": "application/json"})
    assert chunked.status_code == 413
    form = api.post("/api/worlds", content=b"name=x", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert form.status_code == 415  # what a page of another site may send without asking
    broken = api.post("/api/worlds", content=b"{nope", headers={"Content-Type": "application/json"})
    assert broken.status_code == 422 and broken.json()["error"]["code"] == "validation_error"
