"""Who may call the server: loopback by default; beyond it a token or no start at all; the Host
header checked; CORS closed; bodies limited and JSON only; state-changing requests from pages
of other origins refused and the login cookie bound to its port (SPEC §7.1 C5)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from http_harness import Served, free_port, refusal, server_env, start_server

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


# -- cross-site requests (SPEC §7.1 C5) ---------------------------------------------------------

def _state(api: httpx.Client, world: str) -> tuple[list[str], str | None, bool]:
    """What a cross-site request could change: the chats, the current chat, the world itself."""
    chats = [c["chatId"] for c in api.get(f"/api/worlds/{world}/chats").json()["chats"]]
    found = api.get(f"/api/worlds/{world}")
    return chats, found.json().get("currentChatId") if found.status_code == 200 else None, found.status_code == 200


def _world_with_two_chats(api: httpx.Client, world: str) -> tuple[str, str]:
    assert api.post("/api/worlds", json={"name": world}).status_code == 201
    first = api.post(f"/api/worlds/{world}/chats").json()["chatId"]
    second = api.post(f"/api/worlds/{world}/chats").json()["chatId"]
    return first, second


def _state_changing(world: str, first: str, second: str) -> list[tuple[str, str, dict[str, object] | None]]:
    """Every kind of state-changing route: with a body and without one."""
    return [
        ("POST", "/api/worlds", {"name": f"{world}-made-elsewhere"}),
        ("POST", f"/api/worlds/{world}/chats", None),
        ("POST", f"/api/worlds/{world}/chats/{first}/branch", {"messageId": "msg_1"}),
        ("PATCH", f"/api/worlds/{world}/chats/{first}", {"current": True}),
        ("POST", f"/api/worlds/{world}/chats/{second}/stop", None),
        ("POST", f"/api/worlds/{world}/resume", None),
        ("POST", f"/api/worlds/{world}/chats/{second}/messages", {"text": "hi"}),
        ("PATCH", f"/api/worlds/{world}/chats/{second}/messages/msg_x", {"text": "hi"}),
        ("DELETE", f"/api/worlds/{world}/chats/{second}/messages/msg_x", None),
        ("DELETE", f"/api/worlds/{world}/chats/{first}", None),
        ("DELETE", f"/api/worlds/{world}", None),
    ]


def _cross_site_refusal(answer: httpx.Response) -> None:
    status, code, message = refusal(answer)
    assert (status, code) == (403, "cross_site"), (status, code, message)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:1"},  # another port of the same host: same site, other origin
        {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"},
        {"Origin": "null"},  # a sandboxed frame, a file:// page
        {"Origin": "http://localhost:{port}"},  # the same port under another name is another origin
        {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"},  # no Origin at all
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"},  # a browser's, Origin stripped
        {"Origin": "http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-site"},
        {"Content-Type": "text/plain"},  # no Origin and not JSON: a form or a no-cors fetch
        {"Content-Type": "application/x-www-form-urlencoded"},
    ],
    ids=["other-port", "other-site", "null", "other-name", "same-site", "cross-site", "sec-fetch-only",
         "own-origin-same-site", "text-plain", "form"],
)
def test_a_cross_site_request_to_any_state_changing_route_is_refused_and_changes_nothing(
    served: Served, api: httpx.Client, world_name: str, headers: dict[str, str]
) -> None:
    first, second = _world_with_two_chats(api, world_name)
    before = _state(api, world_name)
    port = served.base_url.rsplit(":", 1)[1]
    sent = {k: v.format(port=port) for k, v in headers.items()}
    for method, path, body in _state_changing(world_name, first, second):
        kind = sent.get("Content-Type")
        content = None if body is None or kind is not None else json.dumps(body).encode()
        extra = {} if content is None else {"Content-Type": "application/json"}
        answer = httpx.request(method, served.base_url + path, content=content, headers={**extra, **sent})
        _cross_site_refusal(answer)
    assert _state(api, world_name) == before
    assert api.get(f"/api/worlds/{world_name}-made-elsewhere").status_code == 404


def test_the_servers_own_page_and_non_browser_clients_are_not_refused(
    served: Served, api: httpx.Client, world_name: str
) -> None:
    first, second = _world_with_two_chats(api, world_name)
    port = served.base_url.rsplit(":", 1)[1]
    own = {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
    switched = httpx.patch(f"{served.base_url}/api/worlds/{world_name}/chats/{first}", json={"current": True}, headers=own)
    assert switched.status_code == 200
    assert _state(api, world_name)[1] == first
    # the page opened as http://localhost:PORT talks to the server under that name
    as_localhost = {**own, "Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"}
    assert httpx.post(f"{served.base_url}/api/worlds/{world_name}/chats", headers=as_localhost).status_code == 201
    # curl, the CLI, scripts: no Origin, no Sec-Fetch-*, JSON or no body
    assert httpx.post(f"{served.base_url}/api/worlds/{world_name}/chats/{second}/stop").status_code == 200
    assert api.patch(f"/api/worlds/{world_name}/chats/{second}", json={"current": True}).status_code == 200
    assert httpx.delete(f"{served.base_url}/api/worlds/{world_name}").status_code == 204
    # reading is not changing: a foreign Origin on GET gets its answer (CORS keeps it from the page)
    assert httpx.get(f"{served.base_url}/api/worlds", headers={"Origin": "https://evil.example"}).status_code == 200


def test_an_origin_named_by_cors_origin_may_change_state(tmp_path: Path) -> None:
    trusted = "http://127.0.0.1:5173"
    running = start_server(f"sqlite:///{tmp_path / 'a.db'}", tmp_path, "--cors-origin", trusted)
    try:
        made = httpx.post(f"{running.base_url}/api/worlds", json={"name": "w"},
                          headers={"Origin": trusted, "Sec-Fetch-Site": "same-site"})
        assert made.status_code == 201
        assert made.headers["access-control-allow-origin"] == trusted
        other = httpx.post(f"{running.base_url}/api/worlds/w/chats", headers={"Origin": "http://127.0.0.1:5174"})
        _cross_site_refusal(other)
    finally:
        running.stop()


def test_the_login_cookie_of_one_port_is_refused_on_another_port_with_the_same_token(tmp_path: Path) -> None:
    """Browsers send a host's cookies to every port of it, ``SameSite=Strict`` included: the
    cookie names its port and is derived from it, so the server on port B takes nothing of A's."""
    a = start_server(f"sqlite:///{tmp_path / 'a.db'}", tmp_path, token=TOKEN)
    b = start_server(f"sqlite:///{tmp_path / 'b.db'}", tmp_path, token=TOKEN)
    try:
        port_a, port_b = (s.base_url.rsplit(":", 1)[1] for s in (a, b))
        login = httpx.get(f"{a.base_url}/login", params={"token": TOKEN})
        assert login.status_code == 303
        set_cookie = login.headers["set-cookie"]
        name, _, rest = set_cookie.partition("=")
        value = rest.split(";", 1)[0]
        assert name == f"agentworld_session_{port_a}"
        attributes = {part.strip() for part in set_cookie.split(";")[1:]}
        assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= attributes
        assert httpx.get(f"{a.base_url}/api/worlds", headers={"Cookie": f"{name}={value}"}).status_code == 200
        for cookie in (f"{name}={value}", f"agentworld_session_{port_b}={value}"):
            refused = httpx.get(f"{b.base_url}/api/worlds", headers={"Cookie": cookie})
            assert refused.status_code == 401, cookie
            assert httpx.get(f"{b.base_url}/api/worlds/x/events", headers={"Cookie": cookie}).status_code == 401
    finally:
        a.stop()
        b.stop()
