"""The transcript reads in the order things happened: the approval a person answered comes
before the run of the tool it allowed — live, and when the chat is read again."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page, expect

from conftest import Served, shot

# Each transcript entry, in document order: an approval line, or a tool card with its status.
ORDER = """() => [...document.querySelectorAll(
  "[data-testid=transcript] [data-testid=approval-line], [data-testid=transcript] [data-testid=tool-card]")]
  .map((el) => el.dataset.testid === "approval-line"
    ? "approval:" + el.querySelector("[data-testid=tool-status]").dataset.status
    : "tool:" + el.querySelector("[data-testid=tool-status]").dataset.status)"""


def test_the_approval_comes_before_the_tool_run_it_allowed(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    chat = ops_chat("echo ordered")
    page = open_page(served.chat_url(world_name, chat))
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    page.get_by_test_id("composer-input").fill("please run it")
    page.get_by_test_id("composer-input").press("Enter")
    expect(page.get_by_test_id("approval-dialog")).to_have_attribute("data-armed", "true")
    page.get_by_test_id("approval-once").click()
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("The tool said: ordered")
    expect(page.get_by_test_id("tool-card").get_by_test_id("tool-status")).to_have_attribute("data-status", "done")
    shot(page, "transcript-order")
    assert page.evaluate(ORDER) == ["approval:done", "tool:done"]
    # The agent's words asking come first (saying where its call went), then the approval, then
    # the run.
    parts = page.get_by_test_id("transcript").evaluate(
        "(t) => [...t.querySelectorAll('[data-testid=tool-moved], [data-testid=approval-line], "
        "[data-testid=tool-card]')].map((el) => el.dataset.testid)")
    assert parts == ["tool-moved", "approval-line", "tool-card"], parts
    page.reload()
    expect(page.get_by_test_id("tool-card").get_by_test_id("tool-status")).to_have_attribute("data-status", "done")
    assert page.evaluate(ORDER) == ["approval:done", "tool:done"]
