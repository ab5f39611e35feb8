"""The world file in the world's settings: "Export" downloads the file ``agentworld export``
writes, and "Import world file" shows the plan of a .toml and applies it only on a click."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer
from conftest import Served, shot


def test_export_gives_the_file_and_import_shows_the_plan_then_applies_it(
    served: Served, llm: OpenAIWireServer, open_page: Callable[..., Page], world_name: str, tmp_path: Path
) -> None:
    served.make_world(world_name, llm, "writer", "critic")
    page = open_page(f"{served.url}/#/w/{world_name}/settings")
    with page.expect_download() as download_info:
        page.get_by_test_id("world-export").click()
    download = download_info.value
    assert download.suggested_filename == f"{world_name}.toml"
    saved = tmp_path / "exported.toml"
    download.save_as(saved)
    text = saved.read_text(encoding="utf-8")
    assert text == served.api.get(f"/api/worlds/{world_name}/export").text
    assert f"agent:{world_name}/critic" in text

    copy = f"{world_name}-copy"
    changed = tmp_path / f"{copy}.toml"
    changed.write_text(text.replace(f'name = "{world_name}"', f'name = "{copy}"', 1), encoding="utf-8")
    page.get_by_test_id("world-import-file").set_input_files(str(changed))
    dialog = page.get_by_test_id("world-import-dialog")
    expect(dialog).to_be_visible()
    expect(page.get_by_test_id("world-plan-change")).to_have_count(3)
    expect(page.get_by_test_id("world-plan-change").first).to_contain_text(f"create world {copy}")
    shot(page, "world-import-plan")
    page.keyboard.press("Enter")  # Cancel has the focus: Enter never applies
    expect(dialog).to_be_hidden()
    assert served.api.get(f"/api/worlds/{copy}").status_code == 404

    page.get_by_test_id("world-import-file").set_input_files(str(changed))
    page.get_by_test_id("world-import-apply").click()
    expect(page.get_by_test_id("toast").last).to_contain_text(f"World {copy}: 3 changes applied.")
    assert served.api.get(f"/api/worlds/{copy}/export").text == changed.read_text(encoding="utf-8")
    agents = served.api.get(f"/api/worlds/{copy}/agents").json()["agents"]
    assert sorted(a["name"] for a in agents) == ["critic", "writer"]
