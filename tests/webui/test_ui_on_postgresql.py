"""The file change, the edit before approving, the question and conversation control, through
the web UI in Chromium with the server on PostgreSQL (the other browser tests use SQLite): an
``edit_file`` request's diff, its new text corrected in the card and written as corrected; a
question answered by a click resuming the agent; a message edited with an approval waiting
after it, then a branch."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer, Reply, ToolCallSpec
from agentworld.testing.postgres import create_migrated_database
from conftest import Script, Served, calls, serving


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, postgres_server: str) -> Iterator[Served]:
    """This module's server: the UI over a database of its own on the session's PostgreSQL."""
    url = create_migrated_database(postgres_server, f"webui_{os.getpid()}")
    with serving(tmp_path_factory.mktemp("webui-pg"), url) as server:
        yield server


def say(page: Page, text: str) -> None:
    page.get_by_test_id("composer-input").fill(text)
    page.get_by_test_id("composer-input").press("Enter")


def test_an_edit_file_change_corrected_in_the_card_is_written_as_corrected(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    where = served.home / world_name
    where.mkdir()
    (where / "README.md").write_text("# Tool\n\nIt will recieve input.\n")
    script.by_agent[f"{world_name}/ops"] = calls(
        "edit_file", {"path": "README.md", "old": "will recieve", "new": "will recieves"}, said="Fixing it.")
    assert served.db_url.startswith("postgresql")
    chat = served.make_world(world_name, llm, "ops", workingDir=str(where))
    page = open_page(served.chat_url(world_name, chat))
    say(page, "fix the typo")

    card = page.get_by_test_id("approval-dialog")
    diff = card.get_by_test_id("approval-diff")
    expect(diff).to_be_visible()
    expect(diff.locator("[data-kind=add]")).to_have_text(["+It will recieves input."])  # a wrong fix
    expect(card.get_by_test_id("approval-edit")).to_be_enabled()
    card.get_by_test_id("approval-edit").click()
    expect(card.get_by_test_id("edit-old")).to_have_value("will recieve")
    expect(card.get_by_test_id("edit-new")).to_have_value("will recieves")
    card.get_by_test_id("edit-new").fill("will receive")
    expect(card.get_by_test_id("approval-edited")).to_be_enabled()
    card.get_by_test_id("approval-edited").click()
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("The tool said:")
    assert (where / "README.md").read_text() == "# Tool\n\nIt will receive input.\n"


def test_a_question_answered_by_a_click_resumes_the_agent(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply.text(f"Going with {last['content']}")
        question = {"question": "Which environment?", "options": ["staging", "production"], "allowFreeText": False}
        return Reply.tools(ToolCallSpec("ask_user", json.dumps(question)))

    script.by_agent[f"{world_name}/ops"] = answer
    chat = served.make_world(world_name, llm, "ops", workingDir=str(served.home))
    page = open_page(served.chat_url(world_name, chat))
    say(page, "deploy")
    option = page.get_by_test_id("question-card").get_by_test_id("question-option").filter(has_text="staging")
    expect(option).to_be_enabled()
    option.click()
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("Going with")
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("staging")
    assert served.api.get(f"/api/worlds/{world_name}/questions").json() == {"questions": []}


def test_an_edit_takes_the_waiting_approval_away_and_a_branch_keeps_the_edit(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "user" and last["content"] == "deploy":
            return Reply.tools(ToolCallSpec("shell_cmd", json.dumps({"command": "echo deployed"})), content="Deploying.")
        return Reply.text(f"ops read: {last['content']}")

    script.by_agent[f"{world_name}/ops"] = answer
    chat = served.make_world(world_name, llm, "ops", workingDir=str(served.home))
    page = open_page(served.chat_url(world_name, chat))
    say(page, "deploy")
    expect(page.get_by_test_id("approval-dialog")).to_be_visible()
    (waiting,) = served.api.get(f"/api/worlds/{world_name}/approvals").json()["approvals"]

    human = page.locator("[data-testid=message][data-sender=human]")
    human.hover()
    human.get_by_test_id("message-edit").click()
    human.get_by_test_id("edit-input").fill("only check the status")
    human.get_by_test_id("edit-save").click()
    page.get_by_test_id("cut-confirm").click()
    replies = page.locator("[data-testid=message][data-sender=ops]")
    expect(replies).to_have_count(1)
    expect(replies.get_by_test_id("message-body")).to_have_text("ops read: only check the status")
    expect(page.get_by_test_id("approval-dialog")).to_have_count(0)
    expect(page.get_by_test_id("approvals-badge")).to_be_hidden()
    refused = served.api.post(f"/api/worlds/{world_name}/approvals/{waiting['approvalId']}", json={"decision": "approve"})
    assert refused.status_code == 404

    replies.hover()
    replies.get_by_test_id("message-branch").click()
    expect(page.get_by_test_id("chat-branch-source")).to_be_visible()
    branch = page.url.rsplit("/", 1)[1]
    assert branch != chat
    expect(page.locator("[data-testid=transcript] article [data-testid=message-body]")).to_have_text(
        ["only check the status", "ops read: only check the status"])
    expect(page.locator(f"[data-testid=chat-item][data-chat-id={branch}]")).to_have_attribute("data-branch-of", chat)
