"""Toasts never cover a control: they take a place of their own in the page, so Send, Stop and
every other button stay visible and clickable while a notice is shown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer
from conftest import Served, shot

# The boxes of every control on screen.
CONTROLS = """() => [...document.querySelectorAll("button, input, textarea, select, a[href]")]
  .filter((el) => el.offsetParent !== null && !el.closest("[data-testid=toasts]"))
  .map((el) => { const r = el.getBoundingClientRect();
    return { name: el.dataset.testid || el.textContent.trim().slice(0, 20), x: r.x, y: r.y, width: r.width, height: r.height }; })
  .filter((r) => r.width > 0 && r.height > 0)"""


def intersect(a: Any, b: Any) -> bool:
    """Whether two boxes (x, y, width, height) overlap."""
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


@pytest.mark.parametrize("width,height", [(390, 844), (1280, 800)], ids=["phone", "desktop"])
def test_toasts_cover_no_control(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str, width: int, height: int
) -> None:
    chat = served.make_world(world_name, llm, "helper")
    page = open_page(served.chat_url(world_name, chat), width=width, height=height)
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    for _ in range(3):  # several notices at once
        page.get_by_test_id("composer-stop").click()
    toasts = page.get_by_test_id("toast")
    expect(toasts).to_have_count(3)
    expect(toasts.first).to_have_text("Nothing was running here.")
    shot(page, f"toasts-{width}")
    controls = page.evaluate(CONTROLS)
    names = {c["name"] for c in controls}
    assert {"composer-send", "composer-stop", "composer-input"} <= names, names
    for index in range(3):
        box = toasts.nth(index).bounding_box()
        assert box is not None
        covered = [c["name"] for c in controls if intersect(box, c)]
        assert covered == [], f"toast {index} covers {covered}"
    # Send still takes a click while the notices are up.
    page.get_by_test_id("composer-input").fill("still here")
    page.get_by_test_id("composer-send").click(trial=True)
    assert int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth")) <= 0
