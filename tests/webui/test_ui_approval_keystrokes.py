"""Keys typed for something else never answer an approval (SPEC §7.1 C4), in a real browser:
typing in the composer while a request arrives leaves it pending and the text where it was
typed; a click in the moment after the card appears does nothing; a letter answers only once
the card has been shown and focused for a moment; Always takes a second, deliberate step that
shows the exact command; the sandbox line of the approval document."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Locator, Page, expect

from conftest import Served

MARKER = "typed-ahead-marker"


def pending(served: Served, world: str) -> list[dict[str, Any]]:
    return list(served.api.get(f"/api/worlds/{world}/approvals").json()["approvals"])


def grants(served: Served, world: str) -> list[dict[str, Any]]:
    return list(served.api.get(f"/api/worlds/{world}/grants").json()["grants"])


def click_now(page: Page, button: Locator) -> None:
    """A real mouse click where the button is, whether or not it takes clicks yet (as a person
    clicking at what was under the pointer)."""
    box = button.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def test_typing_hello_and_and_then_in_the_composer_while_an_approval_arrives_never_answers_it(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    chat = ops_chat(f"touch {MARKER}")
    page = open_page(served.chat_url(world_name, chat))
    composer = page.get_by_test_id("composer-input")
    composer.focus()
    page.keyboard.type("make the file")
    page.keyboard.press("Enter")
    # the person goes on typing while the agent works: the request arrives mid-word
    page.keyboard.type("hello and then ", delay=90)
    card = page.get_by_test_id("approval-dialog")
    expect(card).to_be_visible()
    page.keyboard.type("hello", delay=40)
    page.keyboard.type(" and then", delay=40)
    expect(card).to_have_attribute("data-armed", "true")
    time.sleep(1.0)  # long after the arming delay: letters typed in the composer still only type
    page.keyboard.type(" also, o s a d", delay=40)

    typed = "hello and then hello and then also, o s a d"
    expect(composer).to_have_value(typed)
    expect(composer).to_be_focused()
    expect(card).to_be_visible()
    assert [a["toolArgs"]["command"] for a in pending(served, world_name)] == [f"touch {MARKER}"]
    assert grants(served, world_name) == []
    assert not (served.home / MARKER).exists()  # nothing ran
    expect(page.get_by_test_id("tool-card").get_by_test_id("tool-status")).to_have_attribute("data-status", "waiting")


def test_a_click_within_the_arming_delay_does_nothing_and_once_runs_the_call_after_it(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    chat = ops_chat("echo armed-click")
    page = open_page(served.chat_url(world_name, chat))
    page.get_by_test_id("composer-input").fill("go")
    page.get_by_test_id("composer-input").press("Enter")
    card = page.get_by_test_id("approval-dialog")
    once = card.get_by_test_id("approval-once")
    expect(once).to_be_visible()
    expect(once).to_be_disabled()  # visibly: greyed until armed
    click_now(page, once)
    click_now(page, card.get_by_test_id("approval-always"))
    assert card.get_attribute("data-armed") == "false", "the clicks came too late to test the delay"
    expect(card.get_by_test_id("approval-always-panel")).to_have_count(0)
    assert len(pending(served, world_name)) == 1

    expect(once).to_be_enabled()
    once.click()
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("The tool said: armed-click")
    assert pending(served, world_name) == []


def test_a_letter_answers_only_after_the_card_has_been_focused_for_a_moment(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    chat = ops_chat("echo by-letter")
    page = open_page(served.chat_url(world_name, chat))
    page.get_by_test_id("composer-input").fill("go")
    page.get_by_test_id("composer-input").press("Enter")
    card = page.get_by_test_id("approval-dialog")
    expect(card).to_have_attribute("data-armed", "true")  # shown long enough, but not focused
    page.keyboard.press("Alt+Shift+A")
    expect(card).to_be_focused()
    page.keyboard.press("o")  # at once after moving there: refused
    assert card.get_attribute("data-letters-armed") == "false"
    expect(card.get_by_test_id("approval-hint")).to_have_attribute("data-refused", "true")
    assert len(pending(served, world_name)) == 1
    expect(page.get_by_test_id("composer-input")).to_have_value("")  # nor typed anywhere

    expect(card).to_have_attribute("data-letters-armed", "true")
    page.keyboard.press("o")
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("The tool said: by-letter")


def test_always_without_its_confirmation_grants_nothing_and_the_confirmation_shows_the_exact_command(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    command = "echo always-asked"
    chat = ops_chat(command)
    page = open_page(served.chat_url(world_name, chat))
    page.get_by_test_id("composer-input").fill("go")
    page.get_by_test_id("composer-input").press("Enter")
    card = page.get_by_test_id("approval-dialog")
    always = card.get_by_test_id("approval-always")
    expect(always).to_be_enabled()
    always.click()
    panel = card.get_by_test_id("approval-always-panel")
    expect(panel.get_by_test_id("approval-always-command")).to_have_text(command)
    expect(panel.get_by_test_id("approval-always-scope")).to_contain_text(f"For the whole world {world_name}, until revoked")
    expect(panel.get_by_test_id("approval-always-cancel")).to_be_focused()
    page.keyboard.press("a")  # no letter confirms
    page.keyboard.press("y")
    expect(panel).to_be_visible()
    assert grants(served, world_name) == [] and len(pending(served, world_name)) == 1

    page.keyboard.press("Enter")  # on Cancel
    expect(panel).to_have_count(0)
    expect(always).to_be_focused()
    assert grants(served, world_name) == [] and len(pending(served, world_name)) == 1

    always.click()
    confirm = card.get_by_test_id("approval-always-confirm")
    expect(confirm).to_be_disabled()  # the second step is armed afresh
    expect(confirm).to_be_enabled()
    confirm.click()
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("The tool said: always-asked")
    assert len(grants(served, world_name)) == 1 and pending(served, world_name) == []


RENDER = """async (docs) => {
  const { ApprovalCard, sandboxLine } = await import("/ui/js/approval_card.js");
  const lines = docs.map((d) => sandboxLine(d)?.textContent ?? null);
  const card = new ApprovalCard(
    { approvalId: "a1", agent: "ops", chatId: "c1", toolName: "shell_cmd", toolArgs: { command: "ls" },
      message: "", createdAt: null, sandbox: docs[0] },
    { world: "w", chatName: "c1", position: 1, total: 1, onAnswer: () => {}, onLater: () => {} });
  const inCard = card.el.querySelector("[data-testid=approval-sandbox]")?.textContent ?? null;
  card.destroy();
  return { lines, inCard };
}"""


def test_the_approval_shows_its_sandbox_or_warns_that_there_is_none(
    served: Served, open_page: Callable[..., Page]
) -> None:
    page = open_page(served.url)
    shown = page.evaluate(RENDER, [
        {"active": True, "writable": ["/home/me/project"], "network": "deny"},
        {"active": True, "writable": ["/srv/a", "/srv/b"], "network": "allow"},
        {"active": False, "writable": [], "network": "deny"},
        {"active": False, "writable": [], "network": "deny", "problem": "bwrap is not installed"},
        None,
    ])
    assert shown["lines"] == [
        "sandboxed: writes only in /home/me/project, no network",
        "sandboxed: writes only in /srv/a, /srv/b, network allowed",
        "NOT sandboxed: the command can write anywhere you can, and reach the network",
        "NOT sandboxed (bwrap is not installed): the command can write anywhere you can, and reach the network",
        None,
    ]
    assert shown["inCard"] == "sandboxed: writes only in /home/me/project, no network"


def test_a_real_shell_approval_card_says_where_the_command_may_write(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    chat = ops_chat("touch sandbox-line-marker")
    page = open_page(served.chat_url(world_name, chat))
    page.get_by_test_id("composer-input").fill("make it")
    page.get_by_test_id("composer-input").press("Enter")
    card = page.get_by_test_id("approval-dialog")
    expect(card).to_be_visible()

    [document] = pending(served, world_name)
    where = os.path.realpath(served.home)
    assert document["sandbox"] == {"active": True, "writable": [where], "network": "deny"}
    expect(card.get_by_test_id("approval-sandbox")).to_have_text(
        f"sandboxed: writes only in {where}, no network"
    )
    expect(card.get_by_test_id("approval-sandbox")).to_have_attribute("data-active", "true")
