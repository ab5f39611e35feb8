"""Approvals in a real browser: the card with the command, approve once → the tool's result
and the agent's answer; deny → the model's reaction; session scope; an answer in one tab
closes the card in the other; keyboard only; the badge across chats. Keystroke safety:
``test_ui_approval_keystrokes.py``."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page, expect

from conftest import Served, shot


def ask(page: Page, text: str) -> None:
    page.get_by_test_id("composer-input").fill(text)
    page.get_by_test_id("composer-input").press("Enter")


def test_approve_once_in_one_tab_runs_the_command_and_closes_the_dialog_in_the_other(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    chat = ops_chat("echo hello-from-tool")
    first = open_page(served.chat_url(world_name, chat))
    second = open_page(served.chat_url(world_name, chat))
    expect(second.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    ask(first, "please check the greeting")

    for page in (first, second):
        dialog = page.get_by_test_id("approval-dialog")
        expect(dialog).to_be_visible()
        expect(dialog.get_by_test_id("approval-command")).to_have_text("echo hello-from-tool")
        expect(dialog.get_by_test_id("approval-agent")).to_have_text("ops")
        expect(dialog.get_by_test_id("approval-reason")).to_have_text("I need to run a command for this.")
        expect(page.get_by_test_id("approvals-count")).to_have_text("1")
    expect(first.get_by_test_id("tool-card").get_by_test_id("tool-status")).to_have_attribute("data-status", "waiting")
    expect(first.get_by_test_id("composer-input")).to_be_focused()  # the card did not take it
    expect(first.get_by_test_id("approval-dialog")).to_have_attribute("data-armed", "true")
    shot(first, "approval-dialog")

    first.get_by_test_id("approval-once").click()
    expect(second.get_by_test_id("approval-dialog")).to_have_count(0)  # answered elsewhere: closed
    expect(first.get_by_test_id("approval-dialog")).to_have_count(0)
    for page in (first, second):
        expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("The tool said: hello-from-tool")
        card = page.get_by_test_id("tool-card")
        expect(card.get_by_test_id("tool-status")).to_have_attribute("data-status", "done")
        card.locator("summary").click()
        expect(card.get_by_test_id("tool-stdout")).to_have_text("hello-from-tool\n")
        expect(page.get_by_test_id("approval-line").get_by_test_id("tool-status")).to_have_text("approved once")
        expect(page.get_by_test_id("approvals-badge")).to_be_hidden()
    shot(first, "tool-result")


def test_deny_tells_the_model_and_the_card_says_denied(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    chat = ops_chat("touch should-not-exist")
    page = open_page(served.chat_url(world_name, chat))
    ask(page, "make a file")
    page.get_by_test_id("approval-deny").click()
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text(
        "The tool said: User denied approval for shell_cmd")
    expect(page.get_by_test_id("tool-card").get_by_test_id("tool-status")).to_have_attribute("data-status", "denied")
    assert not (served.home / "should-not-exist").exists()


def test_approve_for_the_session_lets_the_same_command_run_again_without_asking(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    chat = ops_chat("echo again")
    page = open_page(served.chat_url(world_name, chat))
    ask(page, "once")
    page.get_by_test_id("approval-session").click()
    answers = page.locator("[data-testid=message][data-sender=ops]").filter(has_text="The tool said: again")
    expect(answers).to_have_count(1)
    ask(page, "twice")
    expect(answers).to_have_count(2)
    expect(page.get_by_test_id("tool-card").get_by_test_id("tool-status")).to_have_text(["done", "done"])
    expect(page.get_by_test_id("approval-line")).to_have_count(1)  # the second call did not ask
    expect(page.get_by_test_id("approval-dialog")).to_have_count(0)


def test_an_approval_can_be_answered_with_the_keyboard_alone(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    chat = ops_chat("echo by-keyboard")
    page = open_page(served.chat_url(world_name, chat))
    composer = page.get_by_test_id("composer-input")
    composer.focus()
    page.keyboard.type("run it")
    page.keyboard.press("Enter")
    card = page.get_by_test_id("approval-dialog")
    expect(card).to_be_visible()
    expect(composer).to_be_focused()  # the card never takes the focus by itself
    expect(page.get_by_test_id("approval-announcer")).to_contain_text("Alt+Shift+A")
    page.keyboard.press("Alt+Shift+A")  # the person moves to it
    expect(card).to_be_focused()
    expect(card).to_have_attribute("data-armed", "true")
    page.keyboard.press("Tab")
    expect(page.get_by_test_id("approval-deny")).to_be_focused()  # the safe answer first
    page.keyboard.press("Tab")
    expect(page.get_by_test_id("approval-once")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("The tool said: by-keyboard")
    expect(composer).to_be_focused()  # back where the person was


def test_the_badge_lists_approvals_of_other_chats_and_jumps_to_them(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    other = ops_chat("echo elsewhere")
    here = served.api.post(f"/api/worlds/{world_name}/chats").json()["chatId"]
    page = open_page(served.chat_url(world_name, here))
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    served.api.post(f"/api/worlds/{world_name}/chats/{other}/messages", json={"text": "from another chat"})
    expect(page.get_by_test_id("approvals-count")).to_have_text("1")
    expect(page.get_by_test_id("approval-dialog")).to_have_count(0)  # not this chat's: the badge says it
    page.get_by_test_id("approvals-badge").click()
    page.get_by_test_id("approvals-list-open").click()
    dialog = page.get_by_test_id("approval-dialog")
    expect(dialog.get_by_test_id("approval-command")).to_have_text("echo elsewhere")
    expect(page).to_have_url(served.chat_url(world_name, other))
    expect(dialog).to_be_focused()  # Review moved there, on purpose
    expect(dialog).to_have_attribute("data-letters-armed", "true")  # shown and focused a moment
    page.keyboard.press("d")  # the letter of "Deny"
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("denied")
    expect(page.get_by_test_id("approvals-badge")).to_be_hidden()


def test_a_long_command_is_shown_whole_in_the_arguments_never_folded(
    served: Served, ops_chat: Callable[[str], str], open_page: Callable[..., Page], world_name: str
) -> None:
    """The tail of a long line may be what matters (``…; rm -rf ~``): the dialog's argument
    list shows every value whole and visible, not folded behind a summary of its start."""
    command = "echo " + "harmless-looking " * 12 + "; echo TAIL-MARKER"
    chat = ops_chat(command)
    page = open_page(served.chat_url(world_name, chat))
    ask(page, "please run it")

    dialog = page.get_by_test_id("approval-dialog")
    expect(dialog).to_be_visible()
    shown = dialog.get_by_test_id("approval-args").get_by_test_id("arg-long")
    expect(shown).to_be_visible()
    expect(shown).to_have_text(command)
    expect(dialog.get_by_test_id("approval-args").get_by_text("TAIL-MARKER")).to_be_visible()
