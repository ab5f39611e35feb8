"""Conversation control in a real browser (SPEC §7.3 K1, K2): a person's message edited in place
runs the world again from it, in this tab and another; a chat branched from its third message
opens with those three and is listed under its source; delete from here takes the messages and
the approval or question waiting in them off every tab; a chat another process is running refuses the change
in place; on a phone the actions open from "⋯"; no Enter confirms a removal (C4)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Locator, Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec
from conftest import Script, Served, quiet_env, runs, shot


def wait_for(check: Callable[[], bool], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def say(served: Served, world: str, chat: str, *texts: str) -> list[dict[str, Any]]:
    """Each text sent as a person to a new chat and answered before the next; the transcript
    after."""
    for count, text in enumerate(texts):
        assert served.api.post(f"/api/worlds/{world}/chats/{chat}/messages", json={"text": text}).status_code == 202
        answered = 2 * (count + 1)
        wait_for(lambda: len(served.transcript(world, chat)) >= answered, f"no answer to {text!r}")  # noqa: B023
    return served.transcript(world, chat)


def bodies(page: Page) -> Locator:
    return page.locator("[data-testid=transcript] article [data-testid=message-body]")


def message(page: Page, message_id: str) -> Locator:
    return page.locator(f"[data-testid=transcript] article[data-message-id='{message_id}']")


def test_an_edited_message_replaces_what_followed_and_is_answered_in_every_tab(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = served.make_world(world_name, llm, "a1")
    stored = say(served, world_name, chat, "first question", "second question")
    assert [m["content"] for m in stored] == ["first question", "a1 heard: first question",
                                             "second question", "a1 heard: second question"]
    page = open_page(served.chat_url(world_name, chat))
    other = open_page(served.chat_url(world_name, chat))
    expect(other.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    first = message(page, stored[0]["messageId"])
    expect(bodies(page)).to_have_count(4)

    # The actions show on hover; only a person's message can be edited.
    expect(first.get_by_test_id("message-actions")).to_have_css("opacity", "0")
    first.hover()
    expect(first.get_by_test_id("message-actions")).to_have_css("opacity", "1")
    expect(message(page, stored[1]["messageId"]).get_by_test_id("message-edit")).to_have_count(0)
    first.get_by_test_id("message-edit").click()
    editor = first.get_by_test_id("edit-input")
    expect(editor).to_be_focused()
    expect(editor).to_have_value("first question")
    editor.fill("a better question")
    editor.press("Enter")  # Enter saves: it asks first, with Cancel focused
    dialog = page.get_by_test_id("cut-dialog")
    expect(dialog.get_by_test_id("cut-detail")).to_contain_text("The 3 messages after this one are removed")
    expect(dialog.get_by_test_id("cut-cancel")).to_be_focused()
    page.keyboard.press("Enter")  # a second Enter cancels; it never confirms (C4)
    expect(dialog).to_have_count(0)
    assert len(served.transcript(world_name, chat)) == 4
    expect(editor).to_have_value("a better question")
    shot(page, "message-edit")

    first.get_by_test_id("edit-save").click()
    page.get_by_test_id("cut-confirm").click()
    for tab in (page, other):
        expect(bodies(tab)).to_have_text(["a better question", "a1 heard: a better question"])
        expect(tab.get_by_text("second question")).to_have_count(0)
    after = served.transcript(world_name, chat)
    assert [m["content"] for m in after] == ["a better question", "a1 heard: a better question"]
    assert after[0]["messageId"] != stored[0]["messageId"]  # the edit is a new message, same place
    ids = page.locator("[data-testid=transcript] article").evaluate_all("nodes => nodes.map(n => n.dataset.messageId)")
    assert ids == [m["messageId"] for m in after]
    expect(page.locator(f"[data-testid=chat-item][data-chat-id={chat}] .meta").last).to_contain_text("2 messages")


def test_a_branch_from_the_third_message_opens_with_those_three_under_its_source(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = served.make_world(world_name, llm, "a1")
    stored = say(served, world_name, chat, "one", "two", "three")
    source_name = next(c["name"] for c in served.api.get(f"/api/worlds/{world_name}/chats").json()["chats"]
                       if c["chatId"] == chat)
    page = open_page(served.chat_url(world_name, chat))
    other = open_page(served.chat_url(world_name, chat))
    expect(other.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    third = message(page, stored[2]["messageId"])
    third.hover()
    third.get_by_test_id("message-branch").click()

    expect(page).not_to_have_url(served.chat_url(world_name, chat))
    branch = page.url.rsplit("/", 1)[1]
    expect(bodies(page)).to_have_text(["one", "a1 heard: one", "two"])
    assert [m["content"] for m in served.transcript(world_name, branch)] == ["one", "a1 heard: one", "two"]
    expect(page.get_by_test_id("chat-branch-source")).to_contain_text(f"branch of {source_name}")
    for tab in (page, other):  # the other tab learns of it from the event stream
        items = tab.get_by_test_id("chat-item")
        expect(items).to_have_count(2)
        expect(items.nth(0)).to_have_attribute("data-chat-id", chat)
        expect(items.nth(1)).to_have_attribute("data-chat-id", branch)
        expect(items.nth(1)).to_have_attribute("data-branch-of", chat)
        expect(items.nth(1)).to_have_attribute("data-depth", "1")
        expect(items.nth(1).get_by_test_id("chat-branch-of")).to_have_text(f"↳ branch of {source_name}")
    indent = page.evaluate("""() => [...document.querySelectorAll('[data-testid=chat-item]')]
        .map(li => li.getBoundingClientRect().left)""")
    assert indent[1] > indent[0]
    expect(bodies(other)).to_have_count(6)  # the source is unchanged
    assert len(served.transcript(world_name, chat)) == 6
    shot(page, "branch")

    # The branch goes its own way: the agent answers there from the three messages only.
    page.get_by_test_id("composer-input").fill("four")
    page.get_by_test_id("composer-input").press("Enter")
    expect(bodies(page)).to_have_text(["one", "a1 heard: one", "two", "four", "a1 heard: four"])
    expect(bodies(other)).to_have_count(6)


def test_delete_from_here_takes_the_messages_and_their_waiting_approval_off_every_tab(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    script.by_agent[f"{world_name}/ops"] = runs("echo never-runs")
    chat = served.make_world(world_name, llm, "ops", workingDir=str(served.home))
    page = open_page(served.chat_url(world_name, chat))
    other = open_page(served.chat_url(world_name, chat))
    expect(other.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    page.get_by_test_id("composer-input").fill("please check")
    page.get_by_test_id("composer-input").press("Enter")
    for tab in (page, other):
        expect(tab.get_by_test_id("approval-dialog")).to_be_visible()
        expect(tab.get_by_test_id("approvals-count")).to_have_text("1")
    stored = served.transcript(world_name, chat)
    human = message(page, stored[0]["messageId"])
    human.hover()
    human.get_by_test_id("message-delete").click()
    dialog = page.get_by_test_id("cut-dialog")
    expect(dialog.get_by_test_id("cut-detail")).to_contain_text(f"{len(stored)} messages in all")
    expect(dialog.get_by_test_id("cut-confirm")).to_be_disabled()  # armed only after a moment
    dialog.get_by_test_id("cut-confirm").click()

    for tab in (page, other):
        expect(tab.get_by_test_id("transcript-empty")).to_be_visible()
        expect(tab.locator("[data-testid=transcript] article")).to_have_count(0)
        expect(tab.get_by_test_id("approval-dialog")).to_have_count(0)
        expect(tab.get_by_test_id("approvals-badge")).to_be_hidden()
    assert served.transcript(world_name, chat) == []
    assert served.api.get(f"/api/worlds/{world_name}/approvals").json()["approvals"] == []
    expect(page.locator(f"[data-testid=chat-item][data-chat-id={chat}] .meta").last).to_contain_text("0 messages")


def test_an_edit_while_the_answer_streams_stops_it_and_answers_the_edit(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        asked = body["messages"][-1]["content"]
        if asked == "tell me a long story":
            return Reply.text(" ".join(f"part{i}" for i in range(300)), chunk_delay=0.05)
        return Reply.text(f"briefly: {asked}")

    script.by_agent[f"{world_name}/a1"] = answer
    chat = served.make_world(world_name, llm, "a1")
    page = open_page(served.chat_url(world_name, chat))
    page.get_by_test_id("composer-input").fill("tell me a long story")
    page.get_by_test_id("composer-input").press("Enter")
    expect(page.get_by_test_id("stream-text")).to_contain_text("part3")
    human = page.locator("[data-testid=message][data-sender=human]")
    human.hover()
    human.get_by_test_id("message-edit").click()
    human.get_by_test_id("edit-input").fill("just the gist")
    human.get_by_test_id("edit-save").click()
    expect(page.get_by_test_id("cut-detail")).to_contain_text("No message comes after this one")
    expect(page.get_by_test_id("cut-detail")).to_contain_text("The answer being written now is stopped")
    page.get_by_test_id("cut-confirm").click()

    expect(bodies(page)).to_have_text(["just the gist", "briefly: just the gist"])
    expect(page.get_by_test_id("streaming-message")).to_have_count(0)
    expect(page.locator("[data-testid=agent-chip][data-agent=a1]")).to_have_attribute("data-busy", "false")
    assert [m["content"] for m in served.transcript(world_name, chat)] == ["just the gist", "briefly: just the gist"]


def test_a_question_waiting_in_the_removed_part_leaves_every_tab(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["content"] == "which one?":
            question = {"question": "Staging or production?", "options": ["staging", "production"]}
            return Reply.tools(ToolCallSpec("ask_user", json.dumps(question)))
        return Reply.text("noted")

    script.by_agent[f"{world_name}/ops"] = answer
    chat = served.make_world(world_name, llm, "ops", workingDir=str(served.home))
    stored = say(served, world_name, chat, "hello")
    page = open_page(served.chat_url(world_name, chat))
    other = open_page(served.chat_url(world_name, chat))
    expect(other.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    page.get_by_test_id("composer-input").fill("which one?")
    page.get_by_test_id("composer-input").press("Enter")
    for tab in (page, other):
        expect(tab.get_by_test_id("question-card")).to_be_visible()
    asked = page.locator("[data-testid=message][data-sender=human]").last
    asked.hover()
    asked.get_by_test_id("message-delete").click()
    page.get_by_test_id("cut-confirm").click()
    for tab in (page, other):
        expect(tab.get_by_test_id("question-card")).to_have_count(0)
        expect(tab.get_by_test_id("approvals-badge")).to_be_hidden()
        expect(bodies(tab)).to_have_text(["hello", "noted"])
    assert served.api.get(f"/api/worlds/{world_name}/questions").json() == {"questions": []}
    assert [m["messageId"] for m in served.transcript(world_name, chat)] == [m["messageId"] for m in stored]


def test_a_chat_another_process_runs_refuses_an_edit_or_a_deletion_in_place(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = served.make_world(world_name, llm, "slow")
    script.by_agent[f"{world_name}/slow"] = lambda body: Reply.text("done at last", delay=6.0)
    page = open_page(served.chat_url(world_name, chat))
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    sending = subprocess.Popen(
        [sys.executable, "-m", "agentworld", "--db", served.db_url, "send", world_name, "take your time", "--chat", chat],
        env=quiet_env(served.home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        human = page.locator("[data-testid=message][data-sender=human]")
        expect(human).to_contain_text("take your time")
        human.hover()
        human.get_by_test_id("message-delete").click()
        page.get_by_test_id("cut-confirm").click()
        expect(human.get_by_test_id("message-error")).to_contain_text("Another process is running this chat")
        expect(human).not_to_have_class("going")

        human.hover()
        human.get_by_test_id("message-edit").click()
        human.get_by_test_id("edit-input").fill("changed my mind")
        human.get_by_test_id("edit-save").click()
        page.get_by_test_id("cut-confirm").click()
        expect(human.get_by_test_id("edit-error")).to_contain_text("Another process is running this chat")
        expect(human.get_by_test_id("edit-input")).to_have_value("changed my mind")  # kept to try again
        shot(page, "message-refused")
        out, err = sending.communicate(timeout=60)
    finally:
        if sending.poll() is None:
            sending.kill()
            sending.wait()
    assert sending.returncode == 0, err
    assert [m["content"] for m in served.transcript(world_name, chat)] == ["take your time", "done at last"]
    expect(page.locator("[data-testid=message][data-sender=slow]")).to_contain_text("done at last")


def test_on_a_phone_the_actions_open_from_the_more_button(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = served.make_world(world_name, llm, "a1")
    stored = say(served, world_name, chat, "from my phone", "and again")
    page = open_page(served.chat_url(world_name, chat), width=390, height=844, has_touch=True, is_mobile=True)
    answer = message(page, stored[1]["messageId"])
    expect(answer.get_by_test_id("message-branch")).to_be_hidden()
    more = answer.get_by_test_id("message-more")
    expect(more).to_be_visible()
    more.tap()
    expect(more).to_have_attribute("aria-expanded", "true")
    expect(answer.get_by_test_id("message-branch")).to_be_in_viewport()
    expect(answer.get_by_test_id("message-delete")).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "message-actions-phone")
    answer.get_by_test_id("message-branch").tap()
    expect(bodies(page)).to_have_text(["from my phone", "a1 heard: from my phone"])

    human = page.locator("[data-testid=message][data-sender=human]")
    human.get_by_test_id("message-more").tap()
    human.get_by_test_id("message-edit").tap()
    human.get_by_test_id("edit-input").fill("edited on a phone")
    human.get_by_test_id("edit-save").tap()
    page.get_by_test_id("cut-confirm").tap()
    expect(bodies(page)).to_have_text(["edited on a phone", "a1 heard: edited on a phone"])


CHAT_TREE = r"""
const { chatTree } = await import("/ui/js/chat_list.js");
const chat = (id, from) => ({ chatId: id, name: id, branchOf: from ? { chatId: from, messageId: "m" } : null });
const rows = chatTree([chat("a"), chat("b"), chat("a1", "a"), chat("a2", "a"), chat("a1x", "a1"), chat("orphan", "gone"),
  chat("loop1", "loop2"), chat("loop2", "loop1")]);
return rows.map((r) => `${r.chat.chatId}:${r.depth}`);
"""


def test_the_chat_list_puts_each_branch_under_its_source(served: Served, open_page: Callable[..., Page]) -> None:
    page = open_page(served.url)
    rows = page.evaluate(f"async () => {{ {CHAT_TREE} }}")
    # Newest first; each source before its branches; a branch whose source is gone is a chat of
    # its own; a loop in broken data shows each chat once.
    assert rows == ["orphan:0", "b:0", "a:0", "a2:1", "a1:1", "a1x:2", "loop2:0", "loop1:1"]
