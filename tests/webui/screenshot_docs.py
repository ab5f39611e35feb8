"""Take the web UI's screenshot for the docs (docs/ui-approval.png): the real server, a
scripted agent that asks to fix a typo with ``edit_file``, and Debian's Chromium showing the
approval card with its diff, as the browser tests do.

    python tests/webui/screenshot_docs.py [OUT.png]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from agentworld.testing.openai_wire import OpenAIWireServer
from conftest import CHROMIUM, CHROMIUM_FLAGS, ROOT, Script, calls, serving

GUIDE = """# Deploying

1. Build the image with `make image`.
2. Push it to the registry.
3. The service will recieve traffic once the health check passes.
4. Watch the dashboard for five minutes.
5. Roll back with `make rollback` if errors rise.
"""


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "ui-approval.png"
    script = Script()
    script.by_agent["docs/writer"] = calls(
        "edit_file", {"path": "DEPLOY.md", "old": "will recieve traffic", "new": "will receive traffic"},
        said="There is a typo in step 3 of DEPLOY.md; I will fix it.",
    )
    with tempfile.TemporaryDirectory() as tmp, OpenAIWireServer(responder=script) as llm, serving(Path(tmp)) as served:
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "DEPLOY.md").write_text(GUIDE)
        chat = served.make_world("docs", llm, "writer", workingDir=str(project))
        served.api.patch(f"/api/worlds/docs/chats/{chat}", json={"name": "Fix the deploy guide"})
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(served.chat_url("docs", chat))
            page.get_by_test_id("composer-input").fill("Please proofread DEPLOY.md and fix any typos.")
            page.get_by_test_id("composer-input").press("Enter")
            card = page.get_by_test_id("approval-dialog")
            expect(card.get_by_test_id("approval-diff")).to_be_visible(timeout=15_000)
            expect(card).to_have_attribute("data-armed", "true")
            page.get_by_test_id("composer-input").blur()
            page.screenshot(path=str(out))
            browser.close()
    print(f"{out}: {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
