"""Fixtures of the browser tests: Debian's Chromium driven by Playwright (never a downloaded
browser), the real server with the UI mounted (a subprocess on a loopback port, over a SQLite
file, one per test module) reached through a TCP proxy the tests can cut, and a loopback
OpenAI-compatible server the agents talk to. Screenshots go to ``test-artifacts/webui/``
(git-ignored; ``AGENTWORLD_TEST_ARTIFACTS`` moves it)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright
from tcp_proxy import TcpProxy

from agentworld.runtime.titles import TITLE_INSTRUCTION
from agentworld.testing.openai_wire import AgentScript, OpenAIWireServer, Reply, ToolCallSpec
from agentworld.testing.processes import stop_process

ROOT = Path(__file__).parents[2]
CHROMIUM = os.environ.get("AGENTWORLD_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("AGENTWORLD_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "webui"
SERVE_UI = Path(__file__).with_name("serve_ui.py")
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]

expect.set_options(timeout=15_000)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def quiet_env(home: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "AGENTWORLD_LLM_RETRIES": "1", "NO_COLOR": "1"}
    for name in ("AGENTWORLD_DB", "AGENTWORLD_TOKEN", "OPENAI_API_KEY"):
        env.pop(name, None)
    return env


# -- the model -------------------------------------------------------------------------------

class Script(AgentScript):
    """The shared by-agent responder (``agentworld.testing``), knowing the runtime's title
    instruction."""

    def __init__(self) -> None:
        super().__init__(TITLE_INSTRUCTION)


def tool_said(content: str) -> str:
    """What a tool result says, in short: a shell command's stdout or error, or the text itself
    (a result that is not JSON, such as one that begins with a note about edited arguments)."""
    try:
        result = json.loads(content)
    except ValueError:
        return content
    if not isinstance(result, dict):
        return content
    return str(result.get("stdout", "")).strip() or str(result.get("error", ""))


def calls(tool: str, arguments: dict[str, Any], said: str = "I need to run a command for this.") -> Callable[[dict[str, Any]], Reply]:
    """An agent that calls ``tool`` with ``arguments``, then says what came back."""

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text(f"The tool said: {tool_said(last['content'])}")
        return Reply.tools(ToolCallSpec(tool, json.dumps(arguments)), content=said)

    return answer


def runs(command: str) -> Callable[[dict[str, Any]], Reply]:
    """An agent that asks to run ``command``, then says what came back."""
    return calls("shell_cmd", {"command": command})


@pytest.fixture(scope="session")
def script() -> Script:
    return Script()


@pytest.fixture(scope="session")
def llm(script: Script) -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer(responder=script) as server:
        yield server


# -- the server --------------------------------------------------------------------------------


@dataclass
class Served:
    url: str
    """What the browser opens: through the proxy."""
    db_url: str
    home: Path
    proxy: TcpProxy
    api: httpx.Client
    """Straight to the server, for setting up and checking."""

    def make_world(self, name: str, llm: OpenAIWireServer, *agents: str, **settings: Any) -> str:
        """A world whose agents talk to ``llm``; returns its (current) chat."""
        assert self.api.post("/api/worlds", json={"name": name, **settings}).status_code == 201
        for agent in agents:
            body = {"name": agent, "provider": "openai", "model": "m", "baseUrl": llm.base_url,
                    "systemPrompt": f"agent:{name}/{agent}"}
            assert self.api.post(f"/api/worlds/{name}/agents", json=body).status_code == 201
        created = self.api.post(f"/api/worlds/{name}/chats")
        assert created.status_code == 201
        return str(created.json()["chatId"])

    def transcript(self, world: str, chat: str) -> list[dict[str, Any]]:
        return list(self.api.get(f"/api/worlds/{world}/chats/{chat}/messages").json()["messages"])

    def chat_url(self, world: str, chat: str) -> str:
        return f"{self.url}/#/w/{world}/c/{chat}"


def start_server(home: Path, db_url: str, port: int) -> subprocess.Popen[bytes]:
    """The real server with the UI over ``db_url`` on ``port``, once it answers ``/health``."""
    log = home / "serve.log"
    with log.open("a") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(SERVE_UI), db_url, str(port)],
            env=quiet_env(home), stdout=subprocess.DEVNULL, stderr=stderr,
        )
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {log.read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError("the server did not start")
        time.sleep(0.05)


@contextmanager
def serving(home: Path, db_url: str | None = None) -> Iterator[Served]:
    """The real server with the UI over ``db_url`` (default: a SQLite file in ``home``), behind
    a TCP proxy."""
    db_url = db_url or f"sqlite:///{home / 'agentworld.db'}"
    port = free_port()
    process = start_server(home, db_url, port)
    direct = f"http://127.0.0.1:{port}"
    proxy = TcpProxy(port)
    try:
        with httpx.Client(base_url=direct, timeout=30) as api:
            yield Served(proxy.base_url, db_url, home, proxy, api)
    finally:
        proxy.close()
        stop_process(process)


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("webui")) as server:
        yield server


_worlds = iter(range(1_000_000))


@pytest.fixture
def world_name() -> str:
    return f"w{os.getpid()}x{next(_worlds)}"


@pytest.fixture
def ops_chat(served: Served, llm: OpenAIWireServer, script: Script, world_name: str) -> Callable[[str], str]:
    """``ops_chat(command)``: a world whose agent ``ops`` asks to run ``command``; its chat."""

    def make(command: str) -> str:
        script.by_agent[f"{world_name}/ops"] = runs(command)
        return served.make_world(world_name, llm, "ops", workingDir=str(served.home))

    return make


# -- the browser -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium (``apt-get install chromium``; ``scripts/test`` installs it). Playwright
    is only the driver here: it never downloads a browser of its own.

    Per module, not per session: while Playwright's sync API is started, its event loop counts
    as running in this thread, and the asyncio tests a worker runs between modules need it gone.
    """
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is needed at {CHROMIUM} for the browser tests: apt-get install chromium "
                    "(scripts/test does it as root), or set AGENTWORLD_CHROMIUM")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


_NETWORK_NOISE = re.compile(r"net::ERR_|Failed to load resource|/events")


@pytest.fixture
def open_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    """``open_page(url, viewport=..., color_scheme=...)``: a page in a fresh context (its own
    cookies and storage: another tab of another person). A script error fails the test."""
    contexts = []
    errors: list[str] = []

    def open_(url: str, *, width: int = 1280, height: int = 800, **options: Any) -> Page:
        context = browser.new_context(viewport={"width": width, "height": height}, **options)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
        page.on("console", lambda msg: errors.append(f"console: {msg.text}")
                if msg.type == "error" and not _NETWORK_NOISE.search(msg.text) else None)
        page.on("dialog", lambda dialog: errors.append(f"a script opened a dialog: {dialog.message}"))
        page.goto(url)
        return page

    yield open_
    for context in contexts:
        context.close()
    assert not errors, errors


def shot(page: Page, name: str) -> Path:
    """Save a screenshot of the page as a test artifact."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
