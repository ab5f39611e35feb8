"""The web UI in a real browser: worlds and agents made through the forms, an answer streamed
in, the composer's @mention completion and recipients, the chat list, policy, small screens
and dark mode."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from conftest import Script, Served, shot


def test_a_new_user_creates_a_world_and_an_agent_and_sees_the_answer_stream_in(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    answer = "Hello! " + " ".join(f"word{i}" for i in range(40))
    script.by_agent[f"{world_name}/helper"] = lambda body: Reply.text(answer, chunk_delay=0.03)
    page = open_page(served.url)
    expect(page.get_by_test_id("worlds-page")).to_be_visible()
    form = page.get_by_test_id("world-create-form")
    form.get_by_test_id("field-name").fill(world_name)
    form.get_by_test_id("field-description").fill("A first world")
    form.get_by_test_id("world-create-form-submit").click()
    expect(page.get_by_test_id("agents-strip")).to_be_visible()
    expect(page.get_by_test_id("world-title")).to_have_text(world_name)

    page.get_by_test_id("agent-add").click()
    dialog = page.get_by_test_id("agent-dialog")
    dialog.get_by_test_id("field-name").fill("helper")
    dialog.get_by_test_id("field-model").fill("m")
    dialog.get_by_test_id("field-baseUrl").fill(llm.base_url)
    dialog.get_by_test_id("field-systemPrompt").fill(f"agent:{world_name}/helper")
    dialog.get_by_test_id("field-modelDeadlineSeconds").fill("45")
    # A key is refused where the NAME of its variable belongs, before anything is sent.
    dialog.get_by_test_id("field-apiKeyEnv").fill("sk-live-1234567890abcdef")
    dialog.get_by_test_id("agent-form-submit").click()
    expect(dialog.get_by_test_id("error-apiKeyEnv")).to_contain_text("name of an environment variable")
    dialog.get_by_test_id("field-apiKeyEnv").fill("LOCAL_LLM_KEY")
    dialog.get_by_test_id("agent-form-submit").click()
    expect(dialog).to_have_count(0)
    expect(page.locator("[data-testid=agent-chip][data-agent=helper]")).to_be_visible()
    agent = served.api.get(f"/api/worlds/{world_name}/agents/helper").json()
    assert agent["apiKeyEnv"] == "LOCAL_LLM_KEY" and agent["baseUrl"].startswith(llm.base_url.rstrip("/"))
    assert agent["modelDeadlineSeconds"] == 45

    composer = page.get_by_test_id("composer-input")
    composer.fill("Hi there")
    expect(page.get_by_test_id("composer-recipients")).to_have_text("To everyone: helper")
    composer.press("Enter")
    streaming = page.get_by_test_id("streaming-message")
    expect(streaming).to_be_visible()
    expect(streaming.get_by_test_id("stream-text")).to_contain_text("Hello!")
    expect(page.locator("[data-testid=agent-chip][data-agent=helper]")).to_have_attribute("data-busy", "true")
    shot(page, "chat-streaming")
    final = page.locator("[data-testid=message][data-sender=helper]")
    expect(final.get_by_test_id("message-body")).to_have_text(answer)
    expect(streaming).to_have_count(0)
    human = page.locator("[data-testid=message][data-sender=human]")
    expect(human).to_have_count(1)
    expect(human.get_by_test_id("message-body")).to_have_text("Hi there")
    shot(page, "chat")


def test_the_composer_completes_mentions_and_says_who_will_receive(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = served.make_world(world_name, llm, "alpha", "albert", "bob")
    page = open_page(served.chat_url(world_name, chat))
    composer = page.get_by_test_id("composer-input")
    recipients = page.get_by_test_id("composer-recipients")
    expect(recipients).to_have_text("To everyone: alpha, albert, bob")

    composer.press_sequentially("@al")
    options = page.get_by_test_id("mention-option")
    expect(options).to_have_text(["@alpha", "@albert"])
    composer.press("ArrowDown")
    composer.press("Enter")  # takes the highlighted name; does not send
    expect(composer).to_have_value("@albert ")
    composer.press_sequentially("can you check?")
    expect(recipients).to_have_text("To: albert")

    composer.fill("I think @bob is right")
    composer.press("End")
    expect(recipients).to_contain_text("No agent will answer")
    composer.fill("Hello all")
    composer.press("Shift+Enter")
    composer.press_sequentially("@bob and you")
    expect(composer).to_have_value("Hello all\n@bob and you")
    expect(recipients).to_have_text("To: bob")
    composer.press("Enter")
    expect(page.locator("[data-testid=message][data-sender=bob]")).to_contain_text("bob heard: Hello all")
    expect(page.locator("[data-testid=message][data-sender=alpha]")).to_have_count(0)
    expect(composer).to_have_value("")

    # Clicking an agent shows only its messages.
    page.locator("[data-testid=agent-chip][data-agent=bob] button.name").click()
    expect(page.locator("[data-testid=message][data-sender=human]")).to_be_hidden()
    page.get_by_test_id("filter-clear").click()
    expect(page.locator("[data-testid=message][data-sender=human]")).to_be_visible()


def test_chats_are_listed_made_renamed_exported_and_deleted(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str
) -> None:
    first = served.make_world(world_name, llm, "a1")
    served.api.post(f"/api/worlds/{world_name}/chats/{first}/messages", json={"text": "first chat"})
    page = open_page(served.chat_url(world_name, first))
    expect(page.locator("[data-testid=message][data-sender=a1]")).to_contain_text("a1 heard: first chat")

    page.get_by_test_id("chat-new").click()
    expect(page.get_by_test_id("chat-item")).to_have_count(2)
    expect(page.get_by_test_id("transcript-empty")).to_be_visible()
    page.get_by_test_id("chat-rename").click()
    page.get_by_test_id("rename-input").fill("Release plan")
    page.get_by_test_id("rename-save").click()
    expect(page.get_by_test_id("chat-title")).to_have_text("Release plan")
    page.get_by_test_id("chat-search").fill("release")
    expect(page.get_by_test_id("chat-item")).to_have_count(1)
    page.get_by_test_id("chat-search").fill("")

    page.locator(f"[data-testid=chat-item][data-chat-id={first}] a").click()
    expect(page.locator("[data-testid=message][data-sender=a1]")).to_be_visible()
    with page.expect_download() as download:
        page.get_by_test_id("chat-export").click()
    exported = download.value.path().read_text()
    assert "a1 heard: first chat" in exported and exported.startswith("# ")

    page.get_by_test_id("chat-delete").click()
    page.get_by_test_id("confirm-ok").click()
    expect(page.get_by_test_id("chat-item")).to_have_count(1)
    expect(page.get_by_test_id("chat-title")).to_have_text("Release plan")
    assert [c["name"] for c in served.api.get(f"/api/worlds/{world_name}/chats").json()["chats"]] == ["Release plan"]


def test_settings_and_policy_pages_edit_the_world_and_decide_a_call(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str
) -> None:
    served.make_world(world_name, llm, "a1")
    page = open_page(f"{served.url}/#/w/{world_name}/settings")
    form = page.get_by_test_id("world-settings-form")
    form.get_by_test_id("field-turnLimit").fill("7")
    form.get_by_test_id("field-mainAgent").select_option("a1")
    form.get_by_test_id("field-mcpConfig").fill("{not json")
    form.get_by_test_id("world-settings-form-submit").click()
    expect(form.get_by_test_id("error-mcpConfig")).to_contain_text("not valid JSON")
    form.get_by_test_id("field-mcpConfig").fill('{"mcpServers": {"x": {"command": 5}}}')
    form.get_by_test_id("world-settings-form-submit").click()
    expect(form.get_by_test_id("error-mcpConfig")).not_to_be_empty()  # the server's reason, inline
    form.get_by_test_id("field-mcpConfig").fill("")
    form.get_by_test_id("world-settings-form-submit").click()
    expect(page.get_by_test_id("toast").filter(has_text="Settings saved")).to_be_visible()
    world = served.api.get(f"/api/worlds/{world_name}").json()
    assert world["turnLimit"] == 7 and world["mainAgent"] == "a1"
    shot(page, "settings")

    page.get_by_test_id("tab-policy").click()
    expect(page.get_by_test_id("policy-rules")).to_be_visible()
    # A file's rules are numbered as a person counts them, from 1.
    expect(page.get_by_test_id("policy-rules")).to_contain_text("built-in defaults #1")
    expect(page.get_by_test_id("policy-rules")).not_to_contain_text("#0")
    page.get_by_test_id("policy-test-args").fill('{"command": "rm -rf /"}')
    page.get_by_test_id("policy-test-submit").click()
    expect(page.get_by_test_id("policy-verdict").locator("strong")).to_have_text("ASK_USER")
    shot(page, "policy")

    page.get_by_test_id("tab-settings").click()
    page.get_by_test_id("world-delete").click()
    page.get_by_test_id("confirm-ok").click()
    expect(page.get_by_test_id("worlds-page")).to_be_visible()
    assert served.api.get(f"/api/worlds/{world_name}").status_code == 404


def test_a_phone_sized_screen_in_dark_mode_keeps_the_chat_usable(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = served.make_world(world_name, llm, "a1")
    page = open_page(served.chat_url(world_name, chat), width=375, height=740, color_scheme="dark")
    composer = page.get_by_test_id("composer-input")
    expect(composer).to_be_visible()
    expect(page.get_by_test_id("chat-sidebar")).not_to_be_in_viewport()
    composer.fill("hello from a phone")
    composer.press("Enter")
    expect(page.locator("[data-testid=message][data-sender=a1]")).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(15, 18, 22)"  # the dark palette
    shot(page, "phone-dark")
    page.get_by_test_id("menu-toggle").click()
    expect(page.get_by_test_id("chat-sidebar")).to_be_in_viewport()
    page.get_by_test_id("chat-item").first.locator("a").click()
    expect(page.get_by_test_id("chat-sidebar")).not_to_be_in_viewport()


def test_the_stop_button_ends_the_running_turn(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = served.make_world(world_name, llm, "slow")
    script.by_agent[f"{world_name}/slow"] = lambda body: Reply(content="too late", delay=4.0)
    page = open_page(served.chat_url(world_name, chat))
    composer = page.get_by_test_id("composer-input")
    composer.fill("@slow take your time")
    composer.press("Enter")
    expect(page.locator("[data-testid=agent-chip][data-agent=slow]")).to_have_attribute("data-busy", "true")

    page.get_by_test_id("composer-stop").click()

    expect(page.get_by_test_id("system-message")).to_contain_text("human stopped")
    expect(page.get_by_test_id("streaming-message")).to_have_count(0)
    page.wait_for_timeout(4500)  # the slow answer would have arrived by now
    expect(page.locator("[data-testid=message][data-sender=slow]")).to_have_count(0)
    assert [m["sender"] for m in served.api.get(
        f"/api/worlds/{world_name}/chats/{chat}/messages").json()["messages"]] == ["human", "system"]
