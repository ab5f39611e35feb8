"""A shell command dies with the process that runs it, even of SIGKILL, and the guard that
ensures it changes nothing else the command sees: uncontained (the guard's process-group kill)
and contained (bubblewrap's PID namespace). Real processes, real bubblewrap and real signals;
the checks read /proc, so these tests run on Linux only.

Processes are found by a marker in their command line, which every process of a command
carries (background jobs through ``exec -a``): a contained command's ``$$`` is its pid in its
own namespace, not one this process can look up."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentworld.models.domain import SandboxMode
from agentworld.tools.builtin.shell import run_shell
from agentworld.tools.registry import ToolContext

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

RUNNER = """
import asyncio, sys
from agentworld.models import World
from agentworld.tools.executor import run_tool
from agentworld.tools.registry import ToolContext
from agentworld.tools.world_tools import WorldTools

async def main() -> None:
    world = World(name="w", working_dir=sys.argv[1], sandbox=sys.argv[2])
    shell = (await WorldTools().registry(world)).get("shell_cmd")
    context = ToolContext.for_world(world, chat_id="c", agent="a")
    calls = [run_tool(shell, f"call_{n}", {"command": line}, context) for n, line in enumerate(sys.argv[3:])]
    for result in await asyncio.gather(*calls):
        print(result.content, flush=True)

asyncio.run(main())
"""
"""A runtime in miniature: the world's tools built and run the way the runtime does it."""


MODES = pytest.mark.parametrize("mode", ["off", "on"])
"""Uncontained (the guard alone) and contained in bubblewrap."""


def context(tmp_path: Path, mode: SandboxMode = "off") -> ToolContext:
    return ToolContext(world="w", chat_id="c", agent="a", working_dir=str(tmp_path), sandbox=mode)


def in_background(marker: str) -> str:
    """A background job that carries ``marker`` as its name (``argv[0]``)."""
    return f"(exec -a {marker}-job sleep 30) &"


def announced(marker: str, name: str = "started") -> str:
    """Shell that tags the line with ``marker`` and announces, in the file ``name``, that the
    command runs and which process group it runs in (bash leads its own group)."""
    return f": {marker}; echo $$ > {name}.tmp && mv {name}.tmp {name}"


def start_runner(tmp_path: Path, mode: SandboxMode, *lines: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(tmp_path), mode, *lines],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_started(path: Path, runner: subprocess.Popen[str] | None = None) -> int:
    """The process group id the command announced in ``path``."""
    deadline = time.monotonic() + 20
    while not path.exists():
        if runner is not None and runner.poll() is not None:
            pytest.fail(f"the runner ended first: {runner.communicate()}")
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)
    return int(path.read_text())


def live_processes() -> Iterator[tuple[int, int, bytes]]:
    """(pid, process group, command line) of every process that is not a zombie."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path("/proc", name, "stat").read_text()
            cmdline = Path("/proc", name, "cmdline").read_bytes()
        except OSError:  # it ended while we looked
            continue
        state, _parent, group = stat.rsplit(")", 1)[1].split()[:3]
        if state != "Z":  # zombies run nothing; reaping them is their new parent's business
            yield int(name), int(group), cmdline


def survivors(marker: str, pgid: int | None = None) -> list[int]:
    """Processes with ``marker`` in their command line (the guard, bubblewrap, bash and its
    jobs), or of the command's process group when it is known (uncontained)."""
    return [
        pid
        for pid, group, cmdline in live_processes()
        if group == pgid or marker.encode() in cmdline
    ]


def job_running(marker: str) -> bool:
    return any(f"{marker}-job".encode() in cmdline for _, _, cmdline in live_processes())


def gone_within(seconds: float, marker: str, *pgids: int | None) -> list[int]:
    """Wait until no survivor of the command is left; those left after ``seconds``."""
    deadline = time.monotonic() + seconds
    while (left := [pid for pgid in pgids or (None,) for pid in survivors(marker, pgid)]) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.01)
    return left


def kill_runner(runner: subprocess.Popen[str]) -> None:
    os.kill(runner.pid, signal.SIGKILL)
    runner.communicate()


# -- the command dies with its runner ---------------------------------------------------


@MODES
def test_the_runner_runs_a_command_to_its_end(tmp_path: Path, mode: SandboxMode) -> None:
    """The check on the scripts below: unkilled, the runner's command does its work."""
    with start_runner(tmp_path, mode, "sleep 0.1 && touch F && echo done") as runner:
        out, err = runner.communicate(timeout=30)
    assert runner.returncode == 0, err
    result = json.loads(out)
    assert (result["exit_code"], result["stdout"]) == (0, "done\n")
    assert (tmp_path / "F").exists()


@MODES
def test_a_command_dies_with_its_runner_even_of_sigkill(tmp_path: Path, mode: SandboxMode) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    with start_runner(tmp_path, mode, f"{announced(marker)} && sleep 2 && touch F") as runner:
        pgid = wait_until_started(tmp_path / "started", runner) if mode == "off" else None
        assert survivors(marker, pgid)  # the command is running
        kill_runner(runner)
    assert gone_within(0.5, marker, pgid) == []
    time.sleep(2.5)  # past the end of the sleep
    assert not (tmp_path / "F").exists()


@MODES
def test_a_background_child_dies_with_the_runner(tmp_path: Path, mode: SandboxMode) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    line = f"{in_background(marker)} {announced(marker)}; wait"
    with start_runner(tmp_path, mode, line) as runner:
        pgid = wait_until_started(tmp_path / "started", runner) if mode == "off" else None
        assert job_running(marker)
        kill_runner(runner)
    assert gone_within(0.5, marker, pgid) == []


@MODES
def test_commands_running_side_by_side_all_die_with_the_runner(
    tmp_path: Path, mode: SandboxMode
) -> None:
    """No command holds another's control pipe open, which would keep its guard waiting."""
    marker = f"marker-{uuid.uuid4().hex}"
    lines = [f"{in_background(marker)} {announced(marker, f'started{n}')}; wait" for n in range(3)]
    with start_runner(tmp_path, mode, *lines) as runner:
        pgids = [wait_until_started(tmp_path / f"started{n}", runner) for n in range(3)]
        kill_runner(runner)
    assert gone_within(0.5, marker, *(pgids if mode == "off" else ())) == []


@MODES
async def test_a_cancelled_call_kills_the_command_group(tmp_path: Path, mode: SandboxMode) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    call = asyncio.create_task(
        run_shell({"command": f"{in_background(marker)} {announced(marker)}; wait"}, context(tmp_path, mode))
    )
    pgid = await asyncio.to_thread(wait_until_started, tmp_path / "started")
    assert job_running(marker)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert gone_within(0.5, marker, pgid if mode == "off" else None) == []


# -- what the command sees is unchanged ------------------------------------------------------


@pytest.fixture
def interrupt_not_ignored() -> Iterator[None]:
    """This process as a runtime is usually started: not ignoring SIGINT. A process started in
    the background of a non-interactive shell (``cmd &``) ignores it, and the command inherits
    that on purpose (``process_guard``: an inherited "ignore" stays), so ``kill -INT $$`` would
    not end it — the test would measure how pytest was launched, not the guard."""
    before = signal.getsignal(signal.SIGINT)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize(
    ("line", "exit_code"),
    [
        ("exit 3", 3),
        ("kill -TERM $$", -signal.SIGTERM),
        ("kill -INT $$; echo survived", -signal.SIGINT),
    ],
)
@pytest.mark.usefixtures("interrupt_not_ignored")
async def test_the_exit_code_or_the_killing_signal_is_reported(
    tmp_path: Path, line: str, exit_code: int
) -> None:
    result = await run_shell({"command": line}, context(tmp_path))
    assert (result["exit_code"], result["stdout"]) == (exit_code, "")


@pytest.mark.parametrize(
    ("line", "exit_code"),
    [("exit 3", 3), ("kill -TERM $$", 128 + signal.SIGTERM), ("kill -INT $$; echo survived", 128 + signal.SIGINT)],
)
@pytest.mark.usefixtures("interrupt_not_ignored")
async def test_a_contained_command_killed_by_a_signal_reports_it_as_a_shell_does(
    tmp_path: Path, line: str, exit_code: int
) -> None:
    """Bubblewrap's init reports its command's death by signal N as exit code 128 + N."""
    result = await run_shell({"command": line}, context(tmp_path, "on"))
    assert (result["exit_code"], result["stdout"]) == (exit_code, "")


@MODES
async def test_sigpipe_ends_a_writer_as_in_a_terminal(tmp_path: Path, mode: SandboxMode) -> None:
    """Python ignores SIGPIPE; the command must not inherit that (``yes`` would complain)."""
    result = await run_shell({"command": "yes | head -1"}, context(tmp_path, mode))
    assert (result["exit_code"], result["stdout"], result["stderr"]) == (0, "y\n", "")


@MODES
async def test_the_environment_is_exactly_the_one_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: SandboxMode
) -> None:
    """Under the C locale Python adds LC_CTYPE to its own environment; bash must not see it."""
    for name in [name for name in os.environ if name.startswith("LC_") or name == "LANG"]:
        monkeypatch.delenv(name)
    result = await run_shell({"command": "env"}, context(tmp_path, mode))
    names = {line.split("=", 1)[0] for line in result["stdout"].splitlines()}
    assert "LC_CTYPE" not in names and "PATH" in names


@MODES
async def test_the_command_reads_nothing_from_the_control_pipe(tmp_path: Path, mode: SandboxMode) -> None:
    result = await run_shell({"command": "cat; ls /proc/self/fd"}, context(tmp_path, mode))
    assert result["stdout"].split() == ["0", "1", "2", "3"]  # 3: the directory ls reads
