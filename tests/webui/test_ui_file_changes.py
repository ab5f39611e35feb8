"""A file change in the approval card, in a real browser over the real server: the diff of a
``write_file`` call with added lines green and removed lines red, a long diff scrolling inside
the card with the buttons still on screen (also on a phone-sized screen), a diff line that
looks like markup shown as those characters, and approving it writing exactly that."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer
from conftest import Script, Served, calls, shot

TAIL = "unchanged 1\nunchanged 2\n"
OLD = "hello wrold\n" + "".join(f"row {n}\n" for n in range(120)) + TAIL
NEW = "hello world\n" + "".join(f"row {n} changed\n" for n in range(120)) + TAIL


def file_world(served: Served, llm: OpenAIWireServer, script: Script, world: str, arguments: dict[str, Any],
               files: dict[str, str]) -> tuple[str, Path]:
    """A world whose agent ``ops`` calls ``write_file`` with ``arguments`` in a working
    directory of its own holding ``files``; its chat and that directory."""
    where = served.home / world
    where.mkdir()
    for name, text in files.items():
        (where / name).write_text(text)
    script.by_agent[f"{world}/ops"] = calls("write_file", arguments, said="I will fix the file.")
    return served.make_world(world, llm, "ops", workingDir=str(where)), where


def ask(page: Page, text: str) -> None:
    page.get_by_test_id("composer-input").fill(text)
    page.get_by_test_id("composer-input").press("Enter")


def rgb(page: Page, selector: str, prop: str) -> tuple[int, ...]:
    value = page.eval_on_selector(selector, f"(el) => getComputedStyle(el).{prop}")
    return tuple(int(float(x)) for x in value[value.index("(") + 1 : value.index(")")].split(",")[:3])


def test_a_file_change_shows_its_diff_coloured_and_approving_writes_exactly_that(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    chat, where = file_world(served, llm, script, world_name, {"path": "notes.txt", "content": NEW}, {"notes.txt": OLD})
    page = open_page(served.chat_url(world_name, chat))
    ask(page, "fix the typo")

    card = page.get_by_test_id("approval-dialog")
    diff = card.get_by_test_id("approval-diff")
    expect(diff).to_be_visible()
    [document] = served.api.get(f"/api/worlds/{world_name}/approvals").json()["approvals"]
    shown = [line for line in document["diff"].split("\n") if line]
    expect(diff.get_by_test_id("diff-line")).to_have_text(shown)  # every line, as the server made it
    expect(diff.locator("[data-kind=del]").first).to_have_text("-hello wrold")
    expect(diff.locator("[data-kind=add]").first).to_have_text("+hello world")
    expect(diff.locator("[data-kind=hunk]").first).to_contain_text("@@ -1,")
    expect(card.get_by_test_id("approval-diff-stats")).to_have_text("The change: +121 −121 lines")
    added = rgb(page, "[data-testid=approval-diff] [data-kind=add]", "backgroundColor")
    removed = rgb(page, "[data-testid=approval-diff] [data-kind=del]", "backgroundColor")
    assert added[1] > added[0] and removed[0] > removed[1], (added, removed)  # green, red
    hunk = rgb(page, "[data-testid=approval-diff] [data-kind=hunk]", "color")
    context = rgb(page, "[data-testid=approval-diff] [data-kind=context]", "color")
    assert hunk != context

    # the long diff scrolls inside its own box; the answers stay on the screen
    sizes = diff.evaluate("(el) => [el.scrollHeight, el.clientHeight, getComputedStyle(el).overflowY]")
    assert sizes[0] > sizes[1] * 2 and sizes[2] == "auto", sizes
    expect(card.get_by_test_id("approval-once")).to_be_in_viewport()
    expect(card.get_by_test_id("approval-deny")).to_be_in_viewport()
    diff.evaluate("(el) => { el.scrollTop = el.scrollHeight; }")
    expect(diff.locator("[data-kind=add]").last).to_be_in_viewport()
    expect(card.get_by_test_id("approval-once")).to_be_in_viewport()
    shot(page, "approval-diff")

    card.get_by_test_id("approval-once").click()
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("The tool said:")
    assert (where / "notes.txt").read_text() == NEW


def test_a_diff_line_that_looks_like_markup_is_shown_as_those_characters(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    hostile = '<img src=x onerror="window.__pwned = 1">\n<script>window.__pwned = 2</script>\n<b>bold?</b>\n'
    chat, where = file_world(served, llm, script, world_name, {"path": "page.html", "content": hostile}, {})
    page = open_page(served.chat_url(world_name, chat))
    ask(page, "write the page")

    diff = page.get_by_test_id("approval-dialog").get_by_test_id("approval-diff")
    added = diff.locator("[data-kind=add]")
    expect(added).to_have_text(['+<img src=x onerror="window.__pwned = 1">', "+<script>window.__pwned = 2</script>", "+<b>bold?</b>"])
    assert diff.locator("img, script, b").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    expect(page.get_by_test_id("approval-dialog").get_by_test_id("approval-deny")).to_be_enabled()
    page.get_by_test_id("approval-deny").click()
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("denied")
    assert not (where / "page.html").exists()


def test_on_a_phone_sized_screen_the_diff_scrolls_and_every_answer_stays_reachable(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    chat, where = file_world(served, llm, script, world_name, {"path": "notes.txt", "content": NEW}, {"notes.txt": OLD})
    page = open_page(served.chat_url(world_name, chat), width=390, height=844, is_mobile=True, has_touch=True)
    ask(page, "fix the typo")

    card = page.get_by_test_id("approval-dialog")
    diff = card.get_by_test_id("approval-diff")
    expect(diff).to_be_visible()
    box = diff.bounding_box()
    assert box is not None and box["height"] <= 844 * 0.3, box
    assert diff.evaluate("(el) => el.scrollHeight > el.clientHeight")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390  # no sideways page scroll
    for testid in ("approval-deny", "approval-once", "approval-session", "approval-always", "approval-edit"):
        expect(card.get_by_test_id(testid)).to_be_in_viewport()
    expect(page.get_by_test_id("composer-input")).to_be_in_viewport()
    shot(page, "approval-diff-phone")
    card.get_by_test_id("approval-once").tap()
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("The tool said:")
    assert (where / "notes.txt").read_text() == NEW


RENDER = """async (text) => {
  const { diffView } = await import("/ui/js/diff_view.js");
  const el = diffView(text);
  return [...el.querySelectorAll("[data-testid=diff-line]")].map((n) => [n.dataset.kind, n.textContent]);
}"""


def test_each_kind_of_diff_line_is_told_apart(served: Served, open_page: Callable[..., Page]) -> None:
    page = open_page(served.url)
    text = "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n same\n-old\n+new\n\\ No newline at end of file\n"
    assert page.evaluate(RENDER, text) == [
        ["file", "--- a/f.txt"], ["file", "+++ b/f.txt"], ["hunk", "@@ -1,2 +1,2 @@"], ["context", " same"],
        ["del", "-old"], ["add", "+new"], ["note", "\\ No newline at end of file"],
    ]
