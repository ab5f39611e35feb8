"""Editing a call before approving it, in a real browser over the real server: the command
line of a ``shell_cmd`` request changed in the card runs as changed (and the audit keeps
both), an edit a DENY rule matches is refused in the card with nothing run and the request
still waiting, keys typed in the edit field never answer the request, and arguments the tool
does not take (edited as JSON) are refused in the card too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from agentworld.testing.openai_wire import OpenAIWireServer
from conftest import Script, Served, calls, runs

DENY_RM = """
[[rule]]
name = "no removing"
toolName = "shell_cmd"
commandPrefix = "rm"
decision = "deny"
priority = 900
denyMessage = "Nothing is removed here."
"""


def shell_world(served: Served, llm: OpenAIWireServer, script: Script, world: str, command: str,
                **settings: Any) -> tuple[str, Path]:
    """A world whose agent ``ops`` asks to run ``command`` in a working directory of its own."""
    where = served.home / world
    where.mkdir()
    script.by_agent[f"{world}/ops"] = runs(command)
    return served.make_world(world, llm, "ops", workingDir=str(where), **settings), where


def pending(served: Served, world: str) -> list[dict[str, Any]]:
    return list(served.api.get(f"/api/worlds/{world}/approvals").json()["approvals"])


def open_editor(page: Page) -> None:
    page.get_by_test_id("composer-input").fill("make the file")
    page.get_by_test_id("composer-input").press("Enter")
    card = page.get_by_test_id("approval-dialog")
    expect(card.get_by_test_id("approval-edit")).to_be_enabled()
    card.get_by_test_id("approval-edit").click()


def test_a_changed_command_line_runs_as_changed_and_the_audit_keeps_both(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    chat, where = shell_world(served, llm, script, world_name, "touch asked-for")
    page = open_page(served.chat_url(world_name, chat))
    open_editor(page)

    card = page.get_by_test_id("approval-dialog")
    field = card.get_by_test_id("edit-command")
    expect(field).to_have_value("touch asked-for")
    expect(field).to_be_focused()
    approve = card.get_by_test_id("approval-edited")
    expect(approve).to_be_disabled()  # armed afresh: the click on Edit cannot approve too
    field.fill("touch edited-instead")
    expect(approve).to_be_enabled()
    approve.click()

    expect(page.get_by_test_id("approval-dialog")).to_have_count(0)
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("The tool said:")
    assert (where / "edited-instead").exists()
    assert not (where / "asked-for").exists()
    tool = page.get_by_test_id("tool-card")
    expect(tool.get_by_test_id("tool-status")).to_have_attribute("data-status", "done")
    tool.locator("summary").click()
    expect(tool.get_by_test_id("tool-edited-args")).to_contain_text('"command": "touch edited-instead"')
    expect(tool.get_by_test_id("tool-note")).to_contain_text("a person changed this call's arguments")
    expect(page.get_by_test_id("approval-line").get_by_test_id("tool-status")).to_have_text("approved once, as edited")
    assert pending(served, world_name) == []
    [decision] = [e for e in served.api.get(f"/api/worlds/{world_name}/audit").json()["audit"]
                  if e["event"] == "decision"]
    assert decision["toolArgs"]["command"] == "touch edited-instead"
    assert decision["detail"]["edited"] is True
    assert decision["detail"]["originalArgs"]["command"] == "touch asked-for"


def test_an_edit_a_deny_rule_matches_is_refused_in_the_card_and_nothing_runs(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    rules = served.home / f"{world_name}-policy.toml"
    rules.write_text(DENY_RM)
    chat, where = shell_world(served, llm, script, world_name, "touch harmless", policyFiles=[str(rules)])
    (where / "victim").write_text("keep me")
    page = open_page(served.chat_url(world_name, chat))
    open_editor(page)

    card = page.get_by_test_id("approval-dialog")
    field = card.get_by_test_id("edit-command")
    field.fill("")
    field.focus()
    page.keyboard.type("rm victim; echo o d s a", delay=20)  # letters typed here answer nothing
    approve = card.get_by_test_id("approval-edited")
    expect(approve).to_be_enabled()
    approve.click()

    error = card.get_by_test_id("approval-edit-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("Refused by the policy")
    expect(error).to_contain_text("still waiting")
    expect(field).to_have_value("rm victim; echo o d s a")  # kept, to be fixed
    assert (where / "victim").read_text() == "keep me"
    [still] = pending(served, world_name)
    assert still["toolArgs"]["command"] == "touch harmless"

    card.get_by_test_id("approval-edit-cancel").click()  # back to the call as asked: deny it
    expect(card.get_by_test_id("approval-args")).to_contain_text("touch harmless")
    card.get_by_test_id("approval-deny").click()
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("denied")
    assert pending(served, world_name) == []
    assert (where / "victim").exists() and not (where / "harmless").exists()


RENDER = """async ([tool, args, shell]) => {
  const { CallEditor } = await import("/ui/js/call_editor.js");
  const editor = new CallEditor(tool, args, shell);
  const fields = [...editor.el.querySelectorAll("textarea")].map((t) => [t.dataset.testid, t.value]);
  const areas = editor.el.querySelectorAll("textarea");
  areas[areas.length - 1].value = areas[areas.length - 1].value.replace("one", "two");
  let read;
  try { read = editor.read(); } catch (err) { read = `error: ${err.message}`; }
  return { fields, read, masked: editor.el.querySelector("[data-testid=edit-masked]") !== null };
}"""


def test_each_tool_is_edited_in_the_fields_that_make_its_call(served: Served, open_page: Callable[..., Page]) -> None:
    page = open_page(served.url)
    shell = page.evaluate(RENDER, ["shell_cmd", {"command": "echo", "parameters": ["one"], "timeout": 5},
                                   {"commandLine": "echo one"}])
    assert shell == {"fields": [["edit-command", "echo one"]],
                     "read": {"command": "echo two", "timeout": 5}, "masked": False}
    bare = page.evaluate(RENDER, ["shell_cmd", {"command": "echo", "parameters": ["one"]}, None])
    assert bare["fields"][0][0] == "edit-json"  # no line shown: edited whole, parameters and all
    assert bare["read"] == {"command": "echo", "parameters": ["two"]}
    written = page.evaluate(RENDER, ["write_file", {"path": "a.txt", "content": "one\n"}, None])
    assert written["fields"] == [["edit-content", "one\n"]]
    assert written["read"] == {"path": "a.txt", "content": "two\n"}
    edited = page.evaluate(RENDER, ["edit_file", {"path": "a.txt", "old": "zero", "new": "one"}, None])
    assert edited["fields"] == [["edit-old", "zero"], ["edit-new", "one"]]
    assert edited["read"] == {"path": "a.txt", "old": "zero", "new": "two"}
    other = page.evaluate(RENDER, ["fetch", {"url": "https://x.test/one", "key": "[REDACTED:api_key]"}, None])
    assert other["fields"][0][0] == "edit-json" and other["masked"] is True
    assert other["read"] == {"url": "https://x.test/two", "key": "[REDACTED:api_key]"}
    broken = page.evaluate(RENDER.replace('.replace("one", "two")', '.replace("{", "[")'), ["fetch", {"url": "one"}, None])
    assert str(broken["read"]).startswith("error: The arguments are not JSON")


def test_edited_arguments_the_tool_does_not_take_are_refused_in_the_card(
    served: Served, llm: OpenAIWireServer, script: Script, open_page: Callable[..., Page], world_name: str
) -> None:
    """Any other tool is edited as JSON; arguments its schema refuses come back as 422, shown
    in the card, and the request still waits (here: ``read_file`` of a credentials file, which
    the defaults ask about)."""
    where = served.home / world_name
    where.mkdir()
    (where / ".env").write_text("A=1\n")
    script.by_agent[f"{world_name}/ops"] = calls("read_file", {"path": ".env"}, said="Reading the settings.")
    chat = served.make_world(world_name, llm, "ops", workingDir=str(where))
    page = open_page(served.chat_url(world_name, chat))
    open_editor(page)

    card = page.get_by_test_id("approval-dialog")
    field = card.get_by_test_id("edit-json")
    expect(field).to_have_value('{\n  "path": ".env"\n}')
    field.fill('{"path": ".env", "mode": "everything"}')
    expect(card.get_by_test_id("approval-edited")).to_be_enabled()
    card.get_by_test_id("approval-edited").click()
    error = card.get_by_test_id("approval-edit-error")
    expect(error).to_contain_text("Not a valid call")
    assert [a["toolArgs"] for a in pending(served, world_name)] == [{"path": ".env"}]

    field.fill("not json")
    card.get_by_test_id("approval-edited").click()
    expect(error).to_contain_text("The arguments are not JSON")
    field.fill('{"path": "other.txt"}')
    card.get_by_test_id("approval-edited").click()  # a valid correction runs
    expect(page.get_by_test_id("approval-dialog")).to_have_count(0)
    expect(page.locator("[data-testid=message][data-sender=ops]").last).to_contain_text("The tool said:")
    assert pending(served, world_name) == []
