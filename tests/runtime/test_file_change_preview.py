"""The change an approval shows for a file tool (SPEC F1): the tool's own preview, masked; and a
change that can no longer be shown is shown as that, and its approval writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from agentworld.models.pending import PendingApproval
from agentworld.runtime.file_changes import shown_change, with_shown_file
from agentworld.tools.builtin.definitions import READ_FILE_TOOL, WRITE_FILE_TOOL
from agentworld.tools.builtin.file_writes import FILE_CHANGED
from agentworld.tools.executor import run_tool
from agentworld.tools.registry import ToolContext


def context(work: Path) -> ToolContext:
    return ToolContext(world="w", chat_id="c", agent="a", working_dir=str(work))


async def test_a_tool_without_a_preview_shows_no_change(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    assert await shown_change(READ_FILE_TOOL, {"path": "a.txt"}, context(tmp_path)) is None


async def test_a_change_that_cannot_be_shown_is_never_written(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"\0binary")  # became binary after the call's precheck
    args = {"path": "a.txt", "content": "text\n"}

    change = await shown_change(WRITE_FILE_TOOL, args, context(tmp_path))

    assert change is not None and change.diff.startswith("(the change cannot be shown: a.txt is a binary file")
    (tmp_path / "a.txt").write_text("text again\n")
    call = PendingApproval(
        world="w", tool_call_id="approval_1", chat_id="c", agent="a", tool_name="write_file",
        arguments=json.dumps(args), batch_id="m", trigger_sender="human", original_call_id="call_1",
        request_message_id="m2", message="a: Write a.txt?", tool_args=args, diff=change.diff, file=change.file,
    )  # fmt: skip
    result = await run_tool(WRITE_FILE_TOOL, "call_1", args, with_shown_file(context(tmp_path), call))
    assert result.is_error and FILE_CHANGED in result.content
    assert (tmp_path / "a.txt").read_text() == "text again\n"
