"""A page of another origin in a real browser (SPEC §7.1 C5): served from another loopback port
— the same *site* as the server, so ``SameSite`` cookies would ride along — it fires every
request a page may send without asking (``fetch`` in ``no-cors`` mode with and without a body,
forms, a CORS request that needs a preflight) at the server's state-changing routes. None of
them changes anything: no chat or world made, the current chat not switched, the pending
approval neither stopped nor answered. And the login cookie of a server with a token is worth
nothing to a server on another port with the same token."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, expect

from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from agentworld.testing.processes import stop_process
from conftest import Script, Served, free_port, quiet_env, runs

ATTACK = """<!doctype html><meta charset="utf-8"><title>a page of another origin</title>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe><iframe name="sink3"></iframe>
<form id="f1" method="POST" target="sink1" action="{api}/api/worlds/{world}/chats"></form>
<form id="f2" method="POST" target="sink2" enctype="text/plain" action="{api}/api/worlds">
  <input name='{{"name": "made-by-a-form", "x": "' value='"}}'></form>
<form id="f3" method="POST" target="sink3" action="{api}/api/worlds/{world}/chats/{chat}/stop">
  <input name="a" value="b"></form>
<script>
const api = "{api}", w = "{world}", chat = "{chat}", other = "{other}";
const sent = [];
function post(path, init) {{
  sent.push(fetch(api + path, {{credentials: "include", ...init}}).then(() => "sent", (e) => "failed: " + e));
}}
post(`/api/worlds/${{w}}/chats`, {{method: "POST", mode: "no-cors"}});
post(`/api/worlds/${{w}}/chats/${{chat}}/stop`, {{method: "POST", mode: "no-cors"}});
post(`/api/worlds/${{w}}/chats/${{other}}/stop`, {{method: "POST", mode: "no-cors"}});
post(`/api/worlds/${{w}}/resume`, {{method: "POST", mode: "no-cors"}});
post("/api/worlds", {{method: "POST", mode: "no-cors", body: JSON.stringify({{name: "made-by-fetch"}})}});
post("/api/worlds", {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "application/json"}},
                      body: JSON.stringify({{name: "made-by-fetch-json"}})}});
post(`/api/worlds/${{w}}/chats/${{chat}}/messages`, {{method: "POST", mode: "no-cors",
                      body: JSON.stringify({{text: "sent by another page"}})}});
post(`/api/worlds/${{w}}/approvals/{approval}`, {{method: "POST", mode: "no-cors",
                      body: JSON.stringify({{decision: "approve", scope: "always"}})}});
post("/api/worlds/apply", {{method: "POST", mode: "no-cors", body: '[world]\\nname = "made-by-toml"\\n'}});
post("/api/worlds/apply", {{method: "POST", headers: {{"Content-Type": "application/toml"}},
                      body: '[world]\\nname = "made-by-toml-preflighted"\\n'}});
post(`/api/worlds/${{w}}/chats/${{other}}`, {{method: "PATCH", headers: {{"Content-Type": "application/json"}},
                      body: JSON.stringify({{current: true}})}});
post(`/api/worlds/${{w}}`, {{method: "DELETE"}});
const loaded = [1, 2, 3].map((i) => new Promise((done) => {{
  document.querySelector(`iframe[name=sink${{i}}]`).addEventListener("load", done, {{once: true}});
  document.getElementById(`f${{i}}`).submit();
}}));
Promise.all([...sent, ...loaded]).then((results) => {{ window.attackResults = results; window.attackDone = true; }});
</script>"""


class _Attacker(ThreadingHTTPServer):
    page = ""


class _Handler(BaseHTTPRequestHandler):
    server: _Attacker

    def do_GET(self) -> None:
        body = self.server.page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        return


@pytest.fixture
def attacker() -> Iterator[_Attacker]:
    """A tiny web server on another loopback port: the other origin."""
    server = _Attacker(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _state(served: Served, world: str) -> dict[str, Any]:
    api = served.api
    return {
        "worlds": sorted(w["name"] for w in api.get("/api/worlds").json()["worlds"]),
        "chats": sorted(c["chatId"] for c in api.get(f"/api/worlds/{world}/chats").json()["chats"]),
        "current": api.get(f"/api/worlds/{world}").json()["currentChatId"],
        "approvals": [a["approvalId"] for a in api.get(f"/api/worlds/{world}/approvals").json()["approvals"]],
        "grants": api.get(f"/api/worlds/{world}/grants").json(),
    }


def test_a_page_on_another_port_changes_nothing_through_the_state_changing_routes(
    served: Served, llm: OpenAIWireServer, script: Script, attacker: _Attacker,
    browser: Browser, world_name: str,
) -> None:
    story = " ".join(f"part{i}" for i in range(60))
    asks = runs("echo from-the-agent")

    def answer(body: dict[str, Any]) -> Reply:
        if "story" in str(body["messages"][-1].get("content")):
            return Reply.text(story, chunk_delay=0.05)  # a running turn for Stop to end
        return asks(body)

    script.by_agent[f"{world_name}/ops"] = answer
    other = served.make_world(world_name, llm, "ops", workingDir=str(served.home))
    chat = served.api.post(f"/api/worlds/{world_name}/chats").json()["chatId"]  # the current chat
    assert served.api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": "go"}).status_code == 202
    deadline = time.monotonic() + 20
    while not (pending := served.api.get(f"/api/worlds/{world_name}/approvals").json()["approvals"]):
        assert time.monotonic() < deadline, "no approval was asked for"
        time.sleep(0.05)
    transcript = served.transcript(world_name, chat)
    before = _state(served, world_name)
    assert before["current"] == chat and before["approvals"] == [pending[0]["approvalId"]]
    assert served.api.post(f"/api/worlds/{world_name}/chats/{other}/messages",
                           json={"text": "tell a story"}).status_code == 202

    api = str(served.api.base_url).rstrip("/")
    attacker.page = ATTACK.format(api=api, world=world_name, chat=chat, other=other,
                                  approval=pending[0]["approvalId"])
    context = browser.new_context()  # its console fills with CORS refusals: not open_page's
    try:
        page = context.new_page()
        page.goto(f"http://127.0.0.1:{attacker.server_address[1]}/")
        page.wait_for_function("window.attackDone === true", timeout=20_000)
        results = page.evaluate("window.attackResults")
    finally:
        context.close()
    assert results[:9] == ["sent"] * 9, results  # the no-cors requests left the browser

    deadline = time.monotonic() + 30
    while len(served.transcript(world_name, other)) < 2:  # the story, or a notice it was stopped
        assert time.monotonic() < deadline, served.transcript(world_name, other)
        time.sleep(0.05)
    told = served.transcript(world_name, other)
    assert [m["sender"] for m in told] == ["human", "ops"], told  # not stopped: no notice
    assert told[-1]["content"] == story  # the running turn went on to its end
    assert _state(served, world_name) == before
    assert served.transcript(world_name, chat) == transcript  # nothing posted, nothing answered
    assert not any(name.startswith("made-by") for name in before["worlds"])


TOKEN = "browser-token-for-two-ports-0123"


@contextmanager
def token_server(home: Path) -> Iterator[str]:
    """``agentworld serve --token`` on a free loopback port (the UI mounted); its base URL."""
    port = free_port()
    log = home / f"serve-{port}.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "agentworld", "--db", f"sqlite:///{home / f'{port}.db'}", "serve",
             "--port", str(port), "--token", TOKEN],
            env=quiet_env(home), stdout=subprocess.DEVNULL, stderr=stderr,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"{url}/health", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        yield url
    finally:
        stop_process(process)


def test_a_browser_logged_in_on_one_port_is_not_logged_in_on_another_with_the_same_token(
    browser: Browser, tmp_path: Path
) -> None:
    with token_server(tmp_path) as a, token_server(tmp_path) as b:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(f"{a}/login?token={TOKEN}")  # the web UI, logged in
            page.get_by_test_id("world-create-form").get_by_label("Name").fill("made-on-a")
            page.get_by_test_id("world-create-form").get_by_role("button", name="Create world").click()
            expect(page.get_by_test_id("world-title")).to_have_text("made-on-a")
            expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "live")
            port_a = a.rsplit(":", 1)[1]
            assert [c["name"] for c in context.cookies()] == [f"agentworld_session_{port_a}"]

            # the browser sends A's cookie to B (cookies ignore ports); B takes none of it
            other = context.new_page()
            refused = other.goto(f"{b}/api/worlds")
            assert refused is not None and refused.status == 401
            made = other.evaluate(
                """async (url) => (await fetch(url + "/api/worlds", {method: "POST",
                     headers: {"Content-Type": "application/json"}, body: JSON.stringify({name: "made-on-b"})})).status""",
                b)
            assert made == 401
            assert httpx.get(f"{b}/api/worlds", headers={"Authorization": f"Bearer {TOKEN}"}).json() == {"worlds": []}
        finally:
            context.close()
