"""Every tool's result is masked where it is made (``ToolResult``), like ``shell_cmd``'s output:
the values of this process's secret-named variables never reach the model, whichever tool
(a file read, an MCP server, a client, an error message) carried them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.tools.builtin.definitions import LIST_FILES_TOOL, READ_FILE_TOOL
from agentworld.tools.environment import with_json_forms
from agentworld.tools.executor import ToolResult, mask_process_secrets, run_tool
from agentworld.tools.registry import Tool, ToolContext

KEY = "sk-testkey-ABCDEFGHIJKLMNOP1234"
AWKWARD = 'pa"ss\\wörd-123'
"""A value JSON writes differently: an escaped quote, an escaped backslash, a \\u escape."""


@pytest.fixture(autouse=True)
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DB_PASSWORD", AWKWARD)


def test_a_value_is_masked_in_plain_text_and_in_json() -> None:
    assert ToolResult.ok("c1", f"key={KEY}").content == "key=[REDACTED:OPENAI_API_KEY]"
    shown = ToolResult.ok("c1", {"content": f"{KEY}\n{AWKWARD}\n"}).content
    assert json.loads(shown) == {"content": "[REDACTED:OPENAI_API_KEY]\n[REDACTED:DB_PASSWORD]\n"}


def test_a_result_built_directly_is_masked_too() -> None:
    assert KEY not in ToolResult("c1", json.dumps({"x": KEY}, ensure_ascii=False)).content
    assert KEY not in ToolResult.error("c1", f"failed with {KEY}").content


def test_other_text_is_left_alone() -> None:
    assert mask_process_secrets('{"a": "b"}', environ={"HOME": "/home/someone"}) == '{"a": "b"}'
    assert mask_process_secrets("x", environ={"API_TOKEN": "short"}) == "x"  # under 6 characters


def test_json_forms_add_each_escaped_spelling_once() -> None:
    forms = with_json_forms({AWKWARD: "DB_PASSWORD", "plain-value": "X_TOKEN"})
    assert forms == {
        AWKWARD: "DB_PASSWORD",
        'pa\\"ss\\\\w\\u00f6rd-123': "DB_PASSWORD",
        'pa\\"ss\\\\wörd-123': "DB_PASSWORD",
        "plain-value": "X_TOKEN",
    }


async def test_read_file_and_list_files_results_are_masked(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={KEY}\nPW={AWKWARD}\n")
    (tmp_path / f"{KEY}.txt").write_text("")
    context = ToolContext(world="w", chat_id="c", agent="a", working_dir=str(tmp_path))

    read = await run_tool(READ_FILE_TOOL, "c1", {"path": ".env"}, context)
    listed = await run_tool(LIST_FILES_TOOL, "c2", {"path": "."}, context)

    assert json.loads(read.content)["content"] == "OPENAI_API_KEY=[REDACTED:OPENAI_API_KEY]\nPW=[REDACTED:DB_PASSWORD]\n"
    assert KEY not in listed.content and "[REDACTED:OPENAI_API_KEY].txt" in listed.content


async def test_a_failing_tools_message_is_masked() -> None:
    async def leaky(args: dict[str, Any], context: ToolContext) -> Any:
        raise RuntimeError(f"could not connect with {KEY}")

    result = await run_tool(Tool(name="t", description="", run=leaky), "c1", {}, ToolContext("w", "c", "a"))
    assert result.is_error and KEY not in result.content
