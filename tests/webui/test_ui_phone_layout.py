"""The web UI on a phone (390×844) and a desktop (1280×800): the chat drawer closes with its
own close button, Esc and a tap outside it, and no page scrolls sideways."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer
from conftest import Served, shot

PHONE = {"width": 390, "height": 844}
SIZES = [PHONE, {"width": 1280, "height": 800}]


def overflow(page: Page) -> int:
    """How far the document is wider than the viewport (0: nothing overflows)."""
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


def crowded_world(served: Served, llm: OpenAIWireServer, name: str) -> str:
    """A world with a long name, a long chat name and many agents with long names."""
    agents = [f"agent-with-a-long-name-{i}" for i in range(6)]
    chat = served.make_world(name, llm, *agents, description="A world " * 20)
    served.api.patch(f"/api/worlds/{name}/chats/{chat}", json={"name": "A chat with a rather long name " * 3})
    served.api.post(f"/api/worlds/{name}/chats/{chat}/messages",
                    json={"text": "@nobody " + "averyveryverylongwordwithoutspaces" * 4})
    return chat


@pytest.mark.parametrize("size", SIZES, ids=["phone", "desktop"])
def test_no_page_is_wider_than_the_screen(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str, size: dict[str, int]
) -> None:
    name = world_name + "-with-a-rather-long-world-name-indeed"
    chat = crowded_world(served, llm, name)
    page = open_page(served.url, **size)
    expect(page.get_by_test_id("worlds-page")).to_be_visible()
    assert overflow(page) <= 0, "worlds page"
    page.goto(served.chat_url(name, chat))
    expect(page.get_by_test_id("agent-chip")).to_have_count(6)
    expect(page.get_by_test_id("message")).to_have_count(1)
    shot(page, f"layout-chat-{size['width']}")
    assert overflow(page) <= 0, "chat page"
    if size is PHONE:
        page.get_by_test_id("menu-toggle").click()
        expect(page.get_by_test_id("chat-sidebar")).to_have_class("sidebar open")
        assert overflow(page) <= 0, "chat page with the drawer open"
        page.keyboard.press("Escape")
    for tab, testid in (("settings", "settings-page"), ("policy", "policy-rules")):
        page.goto(f"{served.url}/#/w/{name}/{tab}")
        expect(page.get_by_test_id(testid)).to_be_visible()
        shot(page, f"layout-{tab}-{size['width']}")
        assert overflow(page) <= 0, f"{tab} page"


def wait_until(page: Page, script: str) -> None:
    """Wait until ``script`` is true in the page (the page's CSP forbids wait_for_function)."""
    for _ in range(100):
        if page.evaluate(script):
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"never true: {script}")


def test_the_phone_drawer_closes_with_its_button_esc_and_a_tap_outside(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = served.make_world(world_name, llm, "helper")
    page = open_page(served.chat_url(world_name, chat), **PHONE, has_touch=True)
    menu = page.get_by_test_id("menu-toggle")
    sidebar = page.get_by_test_id("chat-sidebar")
    expect(page.get_by_test_id("agent-chip")).to_have_count(1)

    def open_drawer() -> None:
        menu.click()
        expect(sidebar).to_have_class("sidebar open")
        expect(menu).to_have_attribute("aria-expanded", "true")
        wait_until(page, "document.querySelector('.sidebar').getBoundingClientRect().left >= 0")

    def closed() -> None:
        expect(sidebar).not_to_have_class("sidebar open")
        expect(menu).to_have_attribute("aria-expanded", "false")
        wait_until(page, "document.querySelector('.sidebar').getBoundingClientRect().right <= 0")

    open_drawer()
    close = page.get_by_test_id("drawer-close")
    expect(close).to_be_visible()
    shot(page, "drawer-open-phone")
    close.click()
    closed()
    expect(menu).to_be_focused()

    open_drawer()
    page.keyboard.press("Escape")
    closed()

    open_drawer()
    page.mouse.click(370, 600)  # the transcript, beside the drawer
    closed()
    # The ☰ button stays reachable: the drawer never covers it once closed.
    open_drawer()
    page.get_by_test_id("drawer-close").click()
    closed()
    expect(page.get_by_test_id("drawer-close")).to_be_hidden()
