"""Live and lossless, and safe, in a real browser: a message sent from the CLI (another
process) appears without a reload; the event stream cut mid-answer and kept down while the
answer ends is caught up on reconnect with nothing missed or doubled; hostile Markdown from
an agent or a person renders inert."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer, Reply
from conftest import Script, Served, quiet_env, shot


def test_a_message_sent_from_the_cli_appears_live(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str
) -> None:
    chat = served.make_world(world_name, llm, "a1")
    page = open_page(served.chat_url(world_name, chat))
    expect(page.get_by_test_id("connection")).to_have_attribute("data-state", "live")
    sent = subprocess.run(
        [sys.executable, "-m", "agentworld", "--db", served.db_url, "send", world_name,
         "hello from the terminal", "--chat", chat],
        env=quiet_env(served.home), capture_output=True, text=True, timeout=60,
    )
    assert sent.returncode == 0, sent.stderr
    expect(page.locator("[data-testid=message][data-sender=human]")).to_contain_text("hello from the terminal")
    expect(page.locator("[data-testid=message][data-sender=a1]")).to_contain_text("a1 heard: hello from the terminal")


def test_a_dropped_event_stream_catches_up_with_nothing_missed_or_doubled(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    long_answer = " ".join(f"part{i}" for i in range(50))

    def answer(body: dict[str, Any]) -> Reply:
        if "long story" in body["messages"][-1]["content"]:
            return Reply.text(long_answer, chunk_delay=0.03)
        return Reply.text("a1 is still here")

    script.by_agent[f"{world_name}/a1"] = answer
    chat = served.make_world(world_name, llm, "a1")
    page = open_page(served.chat_url(world_name, chat))
    connection = page.get_by_test_id("connection")
    expect(connection).to_have_attribute("data-state", "live")
    page.get_by_test_id("composer-input").fill("tell me a long story")
    page.get_by_test_id("composer-input").press("Enter")
    expect(page.get_by_test_id("stream-text")).to_contain_text("part3")

    with served.proxy.streams_down():  # cut mid-answer; stays down until the answer is stored
        expect(connection).not_to_have_attribute("data-state", "live")
        deadline = time.monotonic() + 20
        while not any(m["sender"] == "a1" for m in served.transcript(world_name, chat)):
            assert time.monotonic() < deadline, "the answer was not stored"
            time.sleep(0.05)
        served.api.post(f"/api/worlds/{world_name}/chats/{chat}/messages", json={"text": "sent while you were away"})
        while len(served.transcript(world_name, chat)) < 4:
            assert time.monotonic() < deadline, "the second answer was not stored"
            time.sleep(0.05)
        shot(page, "reconnecting")
    assert served.proxy.cuts >= 1

    expect(connection).to_have_attribute("data-state", "live")
    stored = served.transcript(world_name, chat)
    shown = page.locator("[data-testid=transcript] article")
    expect(shown).to_have_count(len(stored))  # nothing missed, nothing twice
    expect(page.get_by_test_id("streaming-message")).to_have_count(0)
    expect(page.locator("[data-testid=message][data-sender=a1]").first.get_by_test_id("message-body")).to_have_text(long_answer)
    expect(page.locator("[data-testid=message][data-sender=human]").last).to_contain_text("sent while you were away")
    ids = page.locator("[data-testid=transcript] article").evaluate_all("nodes => nodes.map(n => n.dataset.messageId)")
    assert ids == [m["messageId"] for m in stored]
    # And the stream goes on.
    page.get_by_test_id("composer-input").fill("still there?")
    page.get_by_test_id("composer-input").press("Enter")
    expect(page.locator("[data-testid=message][data-sender=human]")).to_have_count(3)
    expect(page.locator("[data-testid=message][data-sender=a1]")).to_have_count(3)


HOSTILE = "\n\n".join([
    "<img src=x onerror=\"window.__pwned='img'\">",
    "<script>window.__pwned='script'</script>",
    "[click me](javascript:window.__pwned='link')",
    "[tab](java\tscript:window.__pwned='tab')",
    "[upper](JaVaScRiPt:window.__pwned='upper')",
    "<a href=\"javascript:window.__pwned='a'\">raw anchor</a>",
    "![pixel](javascript:window.__pwned='image')",
    "<svg onload=\"window.__pwned='svg'\"></svg> <iframe src=\"javascript:window.__pwned='iframe'\"></iframe>",
    "**bold <b onmouseover=\"window.__pwned='b'\">x</b>** and [fine](https://example.org/safe?q=1)",
])


def test_hostile_markdown_from_agents_and_people_renders_inert(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    script.by_agent[f"{world_name}/a1"] = lambda body: Reply.text(HOSTILE)
    chat = served.make_world(world_name, llm, "a1")
    page = open_page(served.chat_url(world_name, chat))
    page.get_by_test_id("composer-input").fill(HOSTILE)
    page.get_by_test_id("composer-input").press("Enter")
    bodies = page.get_by_test_id("message-body")
    expect(bodies).to_have_count(2)
    for body in bodies.all():
        expect(body).to_contain_text("<img src=x onerror=")  # shown as text
        expect(body).to_contain_text("<script>window.__pwned='script'</script>")
    for link in page.locator("[data-testid=message-body] span.unsafe-link").all():
        link.click()
    page.locator("[data-testid=message-body] strong").first.hover()
    transcript = page.get_by_test_id("transcript")
    assert transcript.locator("img, script, svg, iframe, object, embed, b, style").count() == 0
    hrefs = transcript.locator("a[href]").evaluate_all("nodes => nodes.map(n => n.href)")
    assert all(h.startswith(("http://", "https://", "mailto:")) for h in hrefs), hrefs
    assert "https://example.org/safe?q=1" in hrefs
    handlers = transcript.evaluate(
        "root => [...root.querySelectorAll('*')].flatMap(n => [...n.attributes].map(a => a.name)).filter(n => n.startsWith('on'))")
    assert handlers == []
    assert page.evaluate("window.__pwned") is None
    shot(page, "hostile-markdown")


MARKDOWN_CASES = r"""
const { renderMarkdown, safeUrl } = await import("/ui/js/markdown.js");
const cases = [
  "# Title\n\nSome *em* and **strong** and `code` and ~~gone~~.",
  "- one\n- two\n  - nested\n\n1. first\n2. second",
  "> quoted <b>bold</b>\n\n```js\nalert('<script>')\n```",
  "[a](javascript:alert(1)) [b](vbscript:x) [c](data:text/html,<script>alert(1)</script>)",
  "[d](  javascript:alert(1)) [e](jav&#x09;ascript:alert(1)) <javascript:alert(1)>",
  "<img src=x onerror=alert(1)><svg/onload=alert(1)><math><mi xlink:href=javascript:alert(1)>",
  "snake_case_name and 2*3*4 and a_b_ and **unclosed and [unclosed](",
  "[".repeat(5000) + "*".repeat(5000) + "`".repeat(5000),
];
const allowed = new Set(["P", "BR", "H3", "H4", "H5", "H6", "STRONG", "EM", "DEL", "CODE", "PRE", "BLOCKQUOTE", "UL", "OL", "LI", "HR", "A", "SPAN"]);
const out = [];
const started = performance.now();
for (const text of cases) {
  const root = document.createElement("div");
  root.append(renderMarkdown(text));
  const tags = [...root.querySelectorAll("*")].map((n) => n.tagName);
  const attrs = [...root.querySelectorAll("*")].flatMap((n) => [...n.attributes].map((a) => `${n.tagName}.${a.name}=${a.value}`));
  out.push({ bad: tags.filter((t) => !allowed.has(t)), attrs, text: root.textContent, html: root.innerHTML });
}
return { out, ms: performance.now() - started, urls: ["https://x.org/a", "mailto:a@b.c", "javascript:alert(1)", " JAVASCRIPT:x", "data:text/html,x", "/relative"].map(safeUrl) };
"""


def test_the_markdown_renderer_only_makes_whitelisted_elements(
    served: Served, open_page: Callable[..., Page]
) -> None:
    page = open_page(served.url)
    result = page.evaluate(f"async () => {{ {MARKDOWN_CASES} }}")
    for case in result["out"]:
        assert case["bad"] == [], case
        for attr in case["attrs"]:
            name = attr.split("=", 1)[0].split(".", 1)[1]
            assert name in {"href", "target", "rel", "referrerpolicy", "class", "title", "start"}, attr
            if name == "href":
                assert attr.split("=", 1)[1].startswith(("http://", "https://", "mailto:")), attr
    first, lists, quote = result["out"][0], result["out"][1], result["out"][2]
    assert first["html"].startswith("<h3>Title</h3><p>Some <em>em</em> and <strong>strong</strong> and <code>code</code>")
    assert "<ul><li>one</li><li><p>two</p><ul><li>nested</li></ul></li></ul><ol>" in lists["html"]
    assert "&lt;b&gt;bold&lt;/b&gt;" in quote["html"] and "alert('&lt;script&gt;')" in quote["html"]
    assert "snake_case_name" in result["out"][6]["text"]
    assert result["ms"] < 1000  # no pathological backtracking on 15,000 unmatched delimiters
    assert result["urls"][:2] == ["https://x.org/a", "mailto:a@b.c"]
    assert result["urls"][2:5] == [None, None, None]
