"""The Policy page's rules table is readable: on a desktop a table whose short words are never
split across lines (only long patterns wrap) under a header that stays in view, on a phone a
card per rule."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer
from conftest import Served, shot

# Every word under 20 characters in a cell of the table, and whether it is split across lines:
# the top of each of its letters is compared with the one before. A line may end after a
# hyphen ("rev-" / "parse"), as in any text; anywhere else the word was split ("Pri/orit/y").
SPLIT_WORDS = """(selector) => {
  const split = [];
  let words = 0;
  const top = (node, i) => {
    const range = document.createRange();
    range.setStart(node, i);
    range.setEnd(node, i + 1);
    const rect = [...range.getClientRects()].find((r) => r.width > 0);
    return rect ? Math.round(rect.top) : null;
  };
  for (const cell of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.textContent.matchAll(/\\S+/g)) {
        if (m[0].length >= 20) continue;
        words += 1;
        for (let i = 1; i < m[0].length; i++) {
          const before = top(node, m.index + i - 1);
          const here = top(node, m.index + i);
          if (before !== null && here !== null && here > before + 2 && m[0][i - 1] !== "-") {
            split.push(m[0]);
            break;
          }
        }
      }
    }
  }
  return { words, split };
}"""


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_no_word_in_the_rules_table_is_split_across_lines(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str, width: int, height: int
) -> None:
    served.make_world(world_name, llm, "ops")
    page = open_page(f"{served.url}/#/w/{world_name}/policy", width=width, height=height)
    rules = page.get_by_test_id("policy-rules")
    expect(rules).to_be_visible()
    expect(rules.locator("tbody tr").first).to_be_visible()
    shot(page, f"policy-rules-{width}")
    found = page.evaluate(SPLIT_WORDS, "[data-testid=policy-rules] th, [data-testid=policy-rules] td")
    assert found["words"] > 20, found
    assert found["split"] == [], found
    assert int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth")) <= 0
    first = rules.locator("tbody tr").first
    if width < 700:
        # A card per rule: each value under its label, the header row not shown.
        expect(rules.locator("thead")).to_be_hidden()
        assert first.evaluate("(tr) => getComputedStyle(tr).display") == "block"
        decision = first.locator("td[data-label=Decision]")
        assert decision.evaluate("(td) => getComputedStyle(td, '::before').content") == '"Decision"'
    else:
        assert rules.locator("th").first.evaluate("(th) => getComputedStyle(th).position") == "sticky"
        # The header stays in view while the rules scroll under it.
        page.locator("[data-testid=policy-page]").evaluate("(el) => { el.scrollTop = 700; }")
        header = rules.locator("th").first.bounding_box()
        assert header is not None and 0 <= header["y"] < 120, header
