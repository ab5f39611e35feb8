"""The built-in tools with real shell commands and real files in temp dirs (SPEC T2)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agentworld.tools.builtin import shell
from agentworld.tools.builtin.files import LIST_CAP, READ_CAP, list_files, read_file
from agentworld.tools.builtin.shell import run_shell
from agentworld.tools.confinement import OutsideWorkingDirectory
from agentworld.tools.registry import ToolContext


def context(tmp_path: Path) -> ToolContext:
    return ToolContext(world="w", chat_id="c", agent="a", working_dir=str(tmp_path))


async def test_a_pipeline_runs_in_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("")
    (tmp_path / "a.txt").write_text("")
    result = await run_shell({"command": "ls | sort -r | head -1"}, context(tmp_path))
    assert (result["exit_code"], result["stdout"], result["directory"]) == (0, "b.txt\n", str(tmp_path))


async def test_stdout_stderr_and_a_non_zero_exit_are_all_returned(tmp_path: Path) -> None:
    result = await run_shell({"command": "echo out; echo err >&2; exit 7"}, context(tmp_path))
    assert (result["stdout"], result["stderr"], result["exit_code"]) == ("out\n", "err\n", 7)


async def test_parameters_are_literal_words_not_more_commands(tmp_path: Path) -> None:
    result = await run_shell(
        {"command": "printf '%s\\n'", "parameters": ["a b", "; touch pwned", "$(id)"]}, context(tmp_path)
    )
    assert result["stdout"].splitlines() == ["a b", "; touch pwned", "$(id)"]
    assert not (tmp_path / "pwned").exists()


async def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await run_shell(
        {"command": "(sleep 2; touch late) & sleep 30", "timeout": 0.3}, context(tmp_path)
    )
    assert result["timed_out"] is True and "timed out" in result["error"]
    assert time.monotonic() - started < 10
    await asyncio.sleep(2.5)
    assert not (tmp_path / "late").exists()  # the background child died with the group


async def test_big_output_is_cut_with_a_note(tmp_path: Path) -> None:
    result = await run_shell({"command": f"head -c {shell.OUTPUT_CAP + 5000} /dev/zero | tr '\\0' x"}, context(tmp_path))
    assert result["stdout"].startswith("x" * 100)
    assert "[output truncated: 5000 more bytes not shown]" in result["stdout"]
    assert len(result["stdout"]) < shell.OUTPUT_CAP + 200


async def test_a_relative_directory_is_inside_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    result = await run_shell({"command": "pwd", "directory": "sub"}, context(tmp_path))
    assert result["stdout"].strip() == str(tmp_path / "sub")
    with pytest.raises(ValueError, match="does not exist"):
        await run_shell({"command": "pwd", "directory": "missing"}, context(tmp_path))


async def test_read_file_reads_inside_and_caps_size(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    assert (await read_file({"path": "notes.txt"}, context(tmp_path)))["content"] == "hello"
    (tmp_path / "big.bin").write_bytes(b"a" * (READ_CAP + 10))
    big = await read_file({"path": "big.bin"}, context(tmp_path))
    assert len(big["content"]) == READ_CAP and "truncated" in big


@pytest.mark.parametrize("escape", ["../secret.txt", "/etc/hostname", "link/secret.txt", "sub/../../secret.txt"])
async def test_file_tools_refuse_paths_outside_the_working_directory(tmp_path: Path, escape: str) -> None:
    inside = tmp_path / "inside"
    (inside / "sub").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("secret")
    (inside / "link").symlink_to(tmp_path)
    with pytest.raises(OutsideWorkingDirectory):
        await read_file({"path": escape}, context(inside))
    with pytest.raises(OutsideWorkingDirectory):
        await list_files({"path": escape.rsplit("/", 1)[0] or "/"}, context(inside))


async def test_list_files_lists_entries_with_types_and_a_cap(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file.txt").write_text("abc")
    listed = await list_files({}, context(tmp_path))
    assert listed["entries"] == [{"name": "dir", "type": "directory"}, {"name": "file.txt", "type": "file", "size": 3}]
    for n in range(LIST_CAP + 3):
        (tmp_path / "dir" / f"f{n:05}").write_text("")
    many = await list_files({"path": "dir"}, context(tmp_path))
    assert len(many["entries"]) == LIST_CAP and "truncated" in many
