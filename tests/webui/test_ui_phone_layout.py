"""The web UI on a phone (390×844) and a desktop (1280×800): the chat drawer closes with its
own close button, Esc and a tap outside it, and no page scrolls sideways."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer
from conftest import Script, Served, runs, shot

PHONE = {"width": 390, "height": 844}
SIZES = [PHONE, {"width": 1280, "height": 800}]


# The controls that stick out of the screen sideways, where a scrolling box of theirs does not
# lead to them (a strip that scrolls sideways, such as the agents', is fine).
CUT_OFF = """() => [...document.querySelectorAll("button, a[href], input, select, textarea")]
  .filter((el) => el.offsetParent !== null && !el.closest(".sidebar:not(.open), .agents-strip"))
  .filter((el) => { const r = el.getBoundingClientRect(); return r.width > 0 && (r.left < -1 || r.right > window.innerWidth + 1); })
  .map((el) => el.dataset.testid || el.textContent.trim().slice(0, 20))"""


def overflow(page: Page) -> int:
    """How far the document is wider than the viewport (0: nothing overflows), failing when a
    control is cut off at the screen's edge."""
    assert page.evaluate(CUT_OFF) == []
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


def crowded_world(served: Served, llm: OpenAIWireServer, script: Script, name: str) -> str:
    """A world with a long name, a long chat name, many agents with long names, a long word in
    a message and an approval waiting (the badge in the top bar, the card over the composer)."""
    agents = [f"agent-with-a-long-name-{i}" for i in range(6)]
    script.by_agent[f"{name}/{agents[0]}"] = runs("echo " + "a-long-argument-" * 6)
    chat = served.make_world(name, llm, *agents, description="A world " * 20, workingDir=str(served.home))
    served.api.patch(f"/api/worlds/{name}/chats/{chat}", json={"name": "A chat with a rather long name " * 3})
    served.api.post(f"/api/worlds/{name}/chats/{chat}/messages",
                    json={"text": "@nobody " + "averyveryverylongwordwithoutspaces" * 4})
    served.api.post(f"/api/worlds/{name}/chats/{chat}/messages", json={"text": f"@{agents[0]} run it"})
    return chat


@pytest.mark.parametrize("size", SIZES, ids=["phone", "desktop"])
def test_no_page_is_wider_than_the_screen(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str,
    size: dict[str, int],
) -> None:
    name = world_name + "-with-a-rather-long-world-name-indeed"
    chat = crowded_world(served, llm, script, name)
    page = open_page(served.url, **size)
    expect(page.get_by_test_id("worlds-page")).to_be_visible()
    assert overflow(page) <= 0, "worlds page"
    page.goto(served.chat_url(name, chat))
    expect(page.get_by_test_id("agent-chip")).to_have_count(6)
    expect(page.get_by_test_id("approval-dialog")).to_be_visible()
    expect(page.get_by_test_id("approvals-badge")).to_be_visible()
    shot(page, f"layout-chat-{size['width']}")
    assert overflow(page) <= 0, "chat page"
    if size is PHONE:
        page.get_by_test_id("menu-toggle").click()
        expect(page.get_by_test_id("chat-sidebar")).to_have_class("sidebar open")
        wait_until(page, "document.querySelector('.sidebar').getBoundingClientRect().left >= 0")
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
    # A tap outside only closes the drawer: landing on Stop, it does not press it.
    open_drawer()
    stop = page.get_by_test_id("composer-stop").bounding_box()
    assert stop is not None and stop["x"] + stop["width"] / 2 > 310
    page.mouse.click(stop["x"] + stop["width"] / 2, stop["y"] + stop["height"] / 2)
    closed()
    page.wait_for_timeout(500)
    expect(page.get_by_test_id("toast")).to_have_count(0)
    page.get_by_test_id("composer-stop").click()  # a tap of its own still presses it
    expect(page.get_by_test_id("toast")).to_have_text("Nothing was running here.")
    # The ☰ button stays reachable: the drawer never covers it once closed.
    open_drawer()
    page.get_by_test_id("drawer-close").click()
    closed()
    expect(page.get_by_test_id("drawer-close")).to_be_hidden()
