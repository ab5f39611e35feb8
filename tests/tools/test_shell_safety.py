"""shell_cmd runs bash (the shell the policy models) in a clean environment, masks secrets in
its output and stays inside the working directory. Real shells in temp dirs."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentworld.tools.builtin import shell
from agentworld.tools.builtin.definitions import SHELL_TOOL
from agentworld.tools.builtin.shell import check_directory, find_bash, run_shell
from agentworld.tools.confinement import OutsideWorkingDirectory
from agentworld.tools.executor import run_tool
from agentworld.tools.registry import ToolContext

OPENAI_KEY = "sk-test-openai-0123456789"


def context(tmp_path: Path, *tool_env: str) -> ToolContext:
    return ToolContext(world="w", chat_id="c", agent="a", working_dir=str(tmp_path), tool_env=tool_env)


@pytest.fixture
def fresh_bash_lookup() -> Iterator[None]:
    shell._lookup_bash.cache_clear()
    yield
    shell._lookup_bash.cache_clear()


# -- one shell: bash -------------------------------------------------------------


async def test_an_ampersand_redirect_is_read_as_bash_reads_it(tmp_path: Path) -> None:
    """dash reads `ls &>/dev/null touch P` as `ls &` then `>/dev/null touch P`; bash as one ls."""
    result = await run_shell({"command": "ls &>/dev/null touch P"}, context(tmp_path))
    assert result["exit_code"] != 0  # ls found no files called touch and P
    assert not (tmp_path / "P").exists()


async def test_ansi_c_quoting_is_bash_syntax(tmp_path: Path) -> None:
    result = await run_shell({"command": "echo $'a\\x41'"}, context(tmp_path))
    assert result["stdout"] == "aA\n"


async def test_the_shell_is_bash_at_an_absolute_path(tmp_path: Path) -> None:
    result = await run_shell({"command": 'echo "$BASH_VERSION|$SHELL"; shopt -q login_shell || echo nologin'},
                             context(tmp_path))
    version, shell_path = result["stdout"].splitlines()[0].split("|")
    assert int(version.split(".")[0]) >= 4
    assert shell_path == find_bash() and os.path.isabs(shell_path)


@pytest.mark.usefixtures("fresh_bash_lookup")
@pytest.mark.parametrize("candidates", [("/nonexistent/bash",), ("/bin/sh",)])
async def test_without_bash_the_tool_refuses_and_never_falls_back_to_sh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, candidates: tuple[str, ...]
) -> None:
    monkeypatch.setattr(shell, "BASH_CANDIDATES", candidates)
    result = await run_tool(SHELL_TOOL, "call_1", {"command": "touch ran"}, context(tmp_path))
    assert result.is_error
    assert "shell_cmd needs bash 4 or later" in json.loads(result.content)["error"]
    assert not (tmp_path / "ran").exists()


# -- a clean environment ---------------------------------------------------------


@pytest.fixture
def dirty_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a developer's shell may hold when they start the CLI."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("SECRET_TOKEN", "custom-secret-token-value")
    monkeypatch.setenv("MY_VAR", "my value")
    monkeypatch.setenv("LD_PRELOAD", "/nonexistent/libevil.so")
    monkeypatch.setenv("PATH", f".:relative/bin::{os.environ['PATH']}:")


@pytest.mark.usefixtures("dirty_env")
async def test_provider_keys_do_not_reach_the_shell(tmp_path: Path) -> None:
    result = await run_shell({"command": 'echo "[$OPENAI_API_KEY][$SECRET_TOKEN]"'}, context(tmp_path))
    assert result["stdout"] == "[][]\n"


@pytest.mark.usefixtures("dirty_env")
async def test_env_shows_only_the_allow_list_and_an_absolute_path(tmp_path: Path) -> None:
    result = await run_shell({"command": "env"}, context(tmp_path))
    names = {line.split("=", 1)[0] for line in result["stdout"].splitlines() if "=" in line}
    assert not names & {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SECRET_TOKEN", "MY_VAR", "LD_PRELOAD"}
    assert not any(name.startswith("BASH_FUNC_") for name in names)
    assert OPENAI_KEY not in result["stdout"]
    path = next(line for line in result["stdout"].splitlines() if line.startswith("PATH="))
    entries = path.removeprefix("PATH=").split(":")
    assert entries and all(entry.startswith("/") for entry in entries)


@pytest.mark.usefixtures("dirty_env")
async def test_a_variable_the_world_lists_is_passed(tmp_path: Path) -> None:
    result = await run_shell({"command": 'echo "$MY_VAR"'}, context(tmp_path, "MY_VAR"))
    assert result["stdout"] == "my value\n"


@pytest.mark.usefixtures("dirty_env")
async def test_a_secret_the_world_passes_on_purpose_is_masked_in_the_output(tmp_path: Path) -> None:
    result = await run_shell(
        {"command": 'echo "$SECRET_TOKEN"; echo "key=$OPENAI_API_KEY" >&2; test -n "$OPENAI_API_KEY"'},
        context(tmp_path, "SECRET_TOKEN", "OPENAI_API_KEY"),
    )
    assert result["exit_code"] == 0  # the value did reach the command
    assert result["stdout"] == "[REDACTED:SECRET_TOKEN]\n"
    assert result["stderr"] == "key=[REDACTED:OPENAI_API_KEY]\n"


async def test_an_exported_bash_function_cannot_replace_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BASH_FUNC_ls%%", "() { touch P; }")
    # The trick is real: a bash that inherits this environment runs the function for `ls`.
    inheriting = await asyncio.create_subprocess_exec(
        find_bash(), "-c", "ls", cwd=tmp_path, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    await inheriting.wait()
    assert (tmp_path / "P").exists()
    (tmp_path / "P").unlink()

    await run_shell({"command": "ls"}, context(tmp_path, "BASH_FUNC_ls%%"))
    assert not (tmp_path / "P").exists()


async def test_bash_env_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    startup = tmp_path / "startup.sh"
    startup.write_text(f"touch {tmp_path / 'sourced'}\n")
    monkeypatch.setenv("BASH_ENV", str(startup))
    monkeypatch.setenv("ENV", str(startup))
    await run_shell({"command": "true"}, context(tmp_path, "BASH_ENV", "ENV"))
    assert not (tmp_path / "sourced").exists()


# -- directory confinement -------------------------------------------------------


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "x").mkdir()
    (root / "out").symlink_to(tmp_path)
    (root / "in").symlink_to(root / "sub")
    return root


@pytest.mark.parametrize(
    ("directory", "refused"),
    [
        ("/home", True),
        ("/", True),
        ("..", True),
        ("../x", True),
        ("sub/../../x", True),
        ("out", True),  # a symlink that leads outside
        ("out/x", True),
        ("/ABS/sub", False),  # an absolute path inside the working directory
        ("/ABS", False),
        ("sub", False),
        ("sub/deeper", False),
        ("sub/../sub/deeper", False),
        ("in", False),  # a symlink that stays inside
        ("out/work/sub", False),  # judged by where it really is: back inside
        (".", False),
        ("", False),
        (None, False),
    ],
)
def test_check_directory_confines_to_the_working_directory(
    work: Path, directory: str | None, refused: bool
) -> None:
    if directory is not None:
        directory = directory.replace("/ABS", str(work))
    problem = check_directory(directory, str(work))
    if refused:
        assert problem is not None and "is outside the working directory" in problem
        assert problem.startswith(f"directory {directory!r}")
    else:
        assert problem is None


def test_check_directory_refuses_a_symlink_loop(work: Path) -> None:
    (work / "loop").symlink_to(work / "loop")
    problem = check_directory("loop/x", str(work))
    assert problem is not None and "cannot be resolved" in problem


@pytest.mark.parametrize("directory", ["/home", "..", "../x", "out"])
async def test_a_refused_directory_is_an_error_result_and_nothing_runs(work: Path, directory: str) -> None:
    ctx = context(work)
    with pytest.raises(OutsideWorkingDirectory):
        await run_shell({"command": "touch ran", "directory": directory}, ctx)
    result = await run_tool(SHELL_TOOL, "call_1", {"command": "touch ran", "directory": directory}, ctx)
    assert result.is_error
    assert json.loads(result.content)["error"] == (
        f"shell_cmd failed: directory {directory!r} is outside the working directory {str(work)!r}"
    )
    assert not list(work.parent.rglob("ran"))


@pytest.mark.parametrize("directory", ["sub/deeper", "/ABS/sub/deeper", "in/deeper"])
async def test_a_directory_inside_runs_there(work: Path, directory: str) -> None:
    directory = directory.replace("/ABS", str(work))
    result = await run_shell({"command": "pwd", "directory": directory}, context(work))
    assert result["stdout"].strip() == result["directory"] == str((work / "sub" / "deeper").resolve())
