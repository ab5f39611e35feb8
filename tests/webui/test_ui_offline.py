"""While the server cannot be reached the page says so plainly — a banner, not only the small
indicator — and the banner goes once the server is back (a restart on the same port)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer
from agentworld.testing.processes import stop_process
from conftest import free_port, shot, start_server


def test_a_banner_shows_while_the_server_is_away_and_goes_when_it_is_back(
    tmp_path: Path, llm: OpenAIWireServer, open_page: Callable[..., Page]
) -> None:
    db_url = f"sqlite:///{tmp_path / 'agentworld.db'}"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(tmp_path, db_url, port)
    try:
        assert httpx.post(f"{url}/api/worlds", json={"name": "away"}).status_code == 201
        chat = httpx.post(f"{url}/api/worlds/away/chats").json()["chatId"]
        page = open_page(f"{url}/#/w/away/c/{chat}", width=390, height=844)
        banner = page.get_by_test_id("offline-banner")
        expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "live")
        expect(banner).to_be_hidden()

        stop_process(server)
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("the server cannot be reached")
        shot(page, "offline-banner")
        # It covers nothing: the composer is below it, whole.
        box, composer = banner.bounding_box(), page.get_by_test_id("composer").bounding_box()
        assert box and composer and box["y"] + box["height"] <= composer["y"]
        # A request that fails on the network keeps it up.
        page.get_by_test_id("composer-input").fill("hello?")
        page.get_by_test_id("composer-send").click()
        expect(page.get_by_test_id("toast").filter(has_text="Not sent")).to_be_visible()
        expect(banner).to_be_visible()

        server = start_server(tmp_path, db_url, port)
        expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "live", timeout=30_000)
        expect(banner).to_be_hidden()
    finally:
        stop_process(server)
