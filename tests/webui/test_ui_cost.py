"""The web UI shows what the agents' calls cost (SPEC O2): on each agent's chip and in the chat
list, updated as answers come in, on a desktop and on a phone without sideways scrolling."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect
from test_ui_phone_layout import PHONE, SIZES, overflow, wait_until

from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from conftest import Script, Served, shot


@pytest.mark.parametrize("size", SIZES, ids=["phone", "desktop"])
def test_agent_chips_and_the_chat_list_show_the_cost_of_the_calls(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str,
    size: dict[str, int],
) -> None:
    chat = served.make_world(world_name, llm, "priced", "unpriced-local-model")
    base = f"/api/worlds/{world_name}"
    served.api.patch(f"{base}/agents/priced", json={"model": "gpt-4o"})
    # 1000 in, 100 out at gpt-4o's $2.50 / $10.00 per million: $0.0035.
    script.by_agent[f"{world_name}/priced"] = lambda body: Reply.text(
        "@unpriced-local-model over to you", prompt_tokens=1000, completion_tokens=100
    )
    script.by_agent[f"{world_name}/unpriced-local-model"] = lambda body: Reply.text(
        "@human done", prompt_tokens=50, completion_tokens=5
    )
    page = open_page(served.chat_url(world_name, chat), **size)
    expect(page.get_by_test_id("agent-chip")).to_have_count(2)

    served.api.post(f"{base}/chats/{chat}/messages", json={"text": "@priced start"})

    chips = page.get_by_test_id("agent-stats")
    expect(chips.nth(0)).to_contain_text("1 calls · 1100 tok · $0.0035")
    expect(chips.nth(1)).to_contain_text("cost ?")
    if size is PHONE:
        page.get_by_test_id("menu-toggle").click()
        wait_until(page, "document.querySelector('.sidebar').getBoundingClientRect().left >= 0")
    expect(page.get_by_test_id("chat-cost")).to_have_text("$0.0035+? · ")
    shot(page, f"cost-{size['width']}")
    assert overflow(page) <= 0
