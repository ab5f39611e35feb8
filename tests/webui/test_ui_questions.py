"""Questions an agent asks (``ask_user``), in a real browser over the real server: a card with
the question and a button per option; a click resumes the agent with that answer; typing in
the composer while a question arrives never answers it; a free-text answer sent from the
card's own field; a question answered elsewhere leaves the page."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec
from conftest import Script, Served

QUESTION = "Which environment?"


def asks(arguments: dict[str, Any]) -> Callable[[dict[str, Any]], Reply]:
    """An agent that asks a person with ``ask_user``, then says what it was told."""

    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text(f"Deploying as told: {last['content']}")
        return Reply.tools(ToolCallSpec("ask_user", json.dumps(arguments)), content="I need to know where.")

    return answer


def question_world(served: Served, llm: OpenAIWireServer, script: Script, world: str, **arguments: Any) -> str:
    script.by_agent[f"{world}/ops"] = asks({"question": QUESTION, **arguments})
    return served.make_world(world, llm, "ops", workingDir=str(served.home))


def waiting(served: Served, world: str) -> list[dict[str, Any]]:
    return list(served.api.get(f"/api/worlds/{world}/questions").json()["questions"])


def test_a_question_answered_by_clicking_an_option_resumes_the_agent_with_that_answer(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = question_world(served, llm, script, world_name, options=["staging", "production"], allowFreeText=False)
    page = open_page(served.chat_url(world_name, chat))
    page.get_by_test_id("composer-input").fill("deploy it")
    page.get_by_test_id("composer-input").press("Enter")

    card = page.get_by_test_id("question-card")
    expect(card).to_be_visible()
    expect(card.get_by_test_id("question-text-shown")).to_have_text(QUESTION)
    expect(card.get_by_test_id("question-option")).to_have_text(["staging", "production"])
    expect(card.get_by_test_id("question-text")).to_have_count(0)  # no free text allowed
    expect(page.get_by_test_id("composer-input")).to_be_focused()  # the card did not take it
    [document] = waiting(served, world_name)
    assert document["chatId"] == chat and document["options"] == ["staging", "production"]

    staging = card.get_by_test_id("question-option").filter(has_text="staging")
    expect(staging).to_be_enabled()
    staging.click()
    expect(page.get_by_test_id("question-card")).to_have_count(0)
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("Deploying as told:")
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("staging")
    assert waiting(served, world_name) == []


def test_typing_in_the_composer_while_a_question_arrives_never_answers_it(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = question_world(served, llm, script, world_name, options=["staging", "production"])
    page = open_page(served.chat_url(world_name, chat))
    composer = page.get_by_test_id("composer-input")
    composer.focus()
    page.keyboard.type("deploy it")
    page.keyboard.press("Enter")
    page.keyboard.type("staging production ", delay=80)  # typing on while the question comes
    card = page.get_by_test_id("question-card")
    expect(card).to_be_visible()
    page.keyboard.type("staging", delay=40)
    expect(card).to_have_attribute("data-armed", "true")
    time.sleep(0.5)
    page.keyboard.type(" 1 2", delay=40)

    expect(composer).to_have_value("staging production staging 1 2")
    expect(composer).to_be_focused()
    assert [q["question"] for q in waiting(served, world_name)] == [QUESTION]
    expect(card.get_by_test_id("question-text")).to_have_value("")

    # its own field: what is typed there, sent with Enter, is the answer
    card.get_by_test_id("question-text").fill("the canary cluster")
    card.get_by_test_id("question-text").press("Enter")
    expect(page.get_by_test_id("question-card")).to_have_count(0)
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("the canary cluster")
    assert waiting(served, world_name) == []
    expect(composer).to_have_value("staging production staging 1 2")


def test_a_question_answered_elsewhere_leaves_the_page(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = question_world(served, llm, script, world_name)
    page = open_page(served.chat_url(world_name, chat))
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    served.api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": "deploy it"})
    card = page.get_by_test_id("question-card")
    expect(card).to_be_visible()
    expect(card.get_by_test_id("question-option")).to_have_count(0)
    [document] = waiting(served, world_name)
    answered = served.api.post(f"/api/worlds/{world_name}/questions/{document['questionId']}", json={"answer": "from the CLI"})
    assert answered.status_code == 200
    expect(page.get_by_test_id("question-card")).to_have_count(0)
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("from the CLI")


def test_the_badge_counts_a_question_of_another_chat_and_jumps_to_its_card(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    other = question_world(served, llm, script, world_name, options=["staging", "production"])
    here = served.api.post(f"/api/worlds/{world_name}/chats").json()["chatId"]
    page = open_page(served.chat_url(world_name, here))
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    served.api.post(f"/api/worlds/{world_name}/chats/{other}/messages", json={"text": "deploy it"})
    expect(page.get_by_test_id("approvals-count")).to_have_text("1")
    expect(page.get_by_test_id("approvals-label")).to_have_text("Questions")
    expect(page.get_by_test_id("question-card")).to_have_count(0)  # not this chat's
    page.get_by_test_id("approvals-badge").click()
    expect(page.get_by_test_id("questions-list")).to_contain_text(QUESTION)
    page.get_by_test_id("questions-list-open").click()
    expect(page).to_have_url(served.chat_url(world_name, other))
    card = page.get_by_test_id("question-card")
    expect(card.get_by_test_id("question-text-shown")).to_have_text(QUESTION)
    expect(page.get_by_test_id("tool-card").get_by_test_id("tool-status")).to_have_text("waiting for your answer")
    card.get_by_test_id("question-option").filter(has_text="production").click()
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("production")
    expect(page.get_by_test_id("approvals-badge")).to_be_hidden()
