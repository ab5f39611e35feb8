"""What a contained ``shell_cmd`` can reach (SPEC C1): real bubblewrap, real files, a real
loopback listener, real processes read from /proc.

Each line here is one a wrong "allow" could let through; run contained, it changes nothing
outside the working directory, reads nothing of ``$HOME``, reaches no network and leaves no
process behind. The uncontained runs are the controls: the same lines do reach out there, so
the contained assertions measure the sandbox, not a line that could never work.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentworld.models.domain import NetworkMode, SandboxMode
from agentworld.tools import sandbox
from agentworld.tools.builtin.shell import SandboxUnavailable, run_shell
from agentworld.tools.registry import ToolContext
from agentworld.tools.sandbox import BWRAP_VARIABLE, bubblewrap_problem

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def context(
    work: Path, mode: SandboxMode = "on", network: NetworkMode = "deny", tool_env: tuple[str, ...] = ()
) -> ToolContext:
    return ToolContext(
        world="w",
        chat_id="c",
        agent="a",
        working_dir=str(work),
        sandbox=mode,
        network=network,
        tool_env=tool_env,
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The world's working directory, with a sibling directory outside it."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "secret").write_text("SECRET-CONTENT\n")
    return tmp_path / "work"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A person's home with a shell profile and an SSH key, as the tool environment's HOME."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-MATERIAL\n")
    (home / ".bashrc").write_text("# profile\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def processes_named(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line holds ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            state = Path("/proc", name, "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = Path("/proc", name, "cmdline").read_bytes()
        except OSError:
            continue
        if state != "Z" and marker.encode() in cmdline:
            found.append(int(name))
    return found


def left_after(seconds: float, marker: str) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := processes_named(marker)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return left


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on loopback, outside any sandbox."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.setblocking(False)
        yield server


def connections(server: socket.socket) -> int:
    """How many connections reached ``server`` (accepted and closed)."""
    seen = 0
    while True:
        try:
            peer, _ = server.accept()
        except BlockingIOError:
            return seen
        peer.close()
        seen += 1


# -- writes --------------------------------------------------------------------------------


async def test_a_contained_redirect_cannot_write_next_to_the_working_directory(work: Path) -> None:
    result = await run_shell({"command": "echo x > ../outside/f"}, context(work))
    assert result["exit_code"] != 0
    assert not (work.parent / "outside" / "f").exists()


async def test_an_uncontained_redirect_does_write_next_to_the_working_directory(work: Path) -> None:
    """The control: the same line, run without the sandbox, reaches out."""
    result = await run_shell({"command": "echo x > ../outside/f"}, context(work, "off"))
    assert result["exit_code"] == 0
    assert (work.parent / "outside" / "f").read_text() == "x\n"


async def test_a_contained_command_writes_in_the_working_directory(work: Path) -> None:
    result = await run_shell(
        {"command": "mkdir -p sub && echo x > sub/f && cat sub/f", "directory": "."}, context(work)
    )
    assert (result["exit_code"], result["stdout"]) == (0, "x\n")
    assert (work / "sub" / "f").read_text() == "x\n"


async def test_a_contained_command_cannot_write_the_system(work: Path) -> None:
    target = Path("/usr") / f"agentworld-{uuid.uuid4().hex}"
    result = await run_shell({"command": f"touch {target}"}, context(work))
    assert result["exit_code"] != 0 and "Read-only file system" in result["stderr"]
    assert not target.exists()


async def test_a_contained_command_cannot_append_to_the_shell_profile(work: Path, home: Path) -> None:
    result = await run_shell({"command": "cat secret >> ~/.bashrc; echo $HOME"}, context(work))
    assert result["stdout"] == f"{home}\n"  # the same HOME, an empty private directory
    assert (home / ".bashrc").read_text() == "# profile\n"


async def test_a_contained_command_cannot_read_ssh_keys(work: Path, home: Path) -> None:
    result = await run_shell({"command": "cat ~/.ssh/id_rsa; ls -a ~"}, context(work))
    assert "PRIVATE-KEY-MATERIAL" not in result["stdout"]
    assert result["stdout"].split() == [".", ".."]


async def test_a_working_directory_inside_home_stays_writable_and_the_rest_hidden(
    home: Path,
) -> None:
    project = home / "project"
    project.mkdir()
    result = await run_shell({"command": "echo x > f && ls -a ~"}, context(project))
    assert result["exit_code"] == 0 and (project / "f").read_text() == "x\n"
    assert result["stdout"].split() == [".", "..", "project"]


async def test_a_contained_tmp_is_private(work: Path) -> None:
    name = f"agentworld-{uuid.uuid4().hex}"
    outer_tmp = Path("/tmp")
    result = await run_shell({"command": f"echo x > /tmp/{name} && cat /tmp/{name}"}, context(work))
    assert (result["exit_code"], result["stdout"]) == (0, "x\n")
    assert not (outer_tmp / name).exists()


# -- network -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "echo hello > /dev/tcp/127.0.0.1/{port}",
        "curl -s -m 3 http://127.0.0.1:{port}/",
    ],
)
async def test_a_contained_command_reaches_no_listener_outside(
    work: Path, listener: socket.socket, line: str
) -> None:
    port = listener.getsockname()[1]
    result = await run_shell({"command": line.format(port=port)}, context(work))
    assert result["exit_code"] != 0
    assert connections(listener) == 0


async def test_with_network_allowed_a_contained_command_reaches_the_listener(
    work: Path, listener: socket.socket
) -> None:
    """The control: the listener does see a connection when the world allows the network."""
    port = listener.getsockname()[1]
    result = await run_shell(
        {"command": f"echo hello > /dev/tcp/127.0.0.1/{port}"}, context(work, network="allow")
    )
    assert result["exit_code"] == 0
    assert connections(listener) == 1


# -- processes -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["on", "off"])
@pytest.mark.parametrize(
    "job",
    [
        "(exec -a {marker} sleep 100) &",
        "(exec -a {marker} sleep 100) >/dev/null 2>&1 &",
        "mkfifo fifo; (exec -a {marker} cat fifo) >/dev/null 2>&1 &",
    ],
)
async def test_a_background_job_dies_with_the_call(work: Path, mode: SandboxMode, job: str) -> None:
    marker = f"job-{uuid.uuid4().hex}"
    started = time.monotonic()
    result = await run_shell({"command": f"{job.format(marker=marker)} echo started"}, context(work, mode))
    assert (result["exit_code"], result["stdout"]) == (0, "started\n")
    assert time.monotonic() - started < 5  # the call never waited for the job
    assert left_after(1, marker) == []


@pytest.mark.parametrize("mode", ["on", "off"])
async def test_a_timeout_does_not_wait_for_a_background_job(work: Path, mode: SandboxMode) -> None:
    marker = f"job-{uuid.uuid4().hex}"
    started = time.monotonic()
    result = await run_shell(
        {"command": f"(exec -a {marker} sleep 100) & sleep 50", "timeout": 1}, context(work, mode)
    )
    assert result["timed_out"] and "killed" in result["error"]
    assert time.monotonic() - started < 6
    assert left_after(1, marker) == []


async def test_a_contained_process_that_leaves_the_group_dies_too(work: Path) -> None:
    marker = f"job-{uuid.uuid4().hex}"
    result = await run_shell(
        {"command": f"setsid bash -c 'exec -a {marker} sleep 100' & echo started"}, context(work)
    )
    assert result["stdout"] == "started\n"
    assert left_after(1, marker) == []


async def test_a_contained_call_cancelled_while_its_sandbox_starts_leaves_nothing_running(work: Path) -> None:
    """A stop that lands within milliseconds of the call's start, before bubblewrap has made
    its sandbox's first process die with it: the guard's group kill still ends the sandbox."""
    random = __import__("random").Random(48)
    markers = []
    for _ in range(60):
        marker = f"job-{uuid.uuid4().hex}"
        markers.append(marker)
        call = asyncio.create_task(run_shell({"command": f"exec -a {marker} sleep 100"}, context(work)))
        await asyncio.sleep(random.uniform(0, 0.015))
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
    try:
        assert [m for m in markers if left_after(1, m)] == []
    finally:
        for marker in markers:
            for pid in processes_named(marker):
                os.kill(pid, 9)


async def test_an_uncontained_process_that_leaves_the_group_dies_with_the_call(work: Path) -> None:
    """Without a sandbox, a ``setsid`` escapes the group kill: the guard adopts it when its
    parent ends (a child subreaper) and kills it once the command is over, and the call does
    not wait for it to close its output."""
    marker = f"job-{uuid.uuid4().hex}"
    started = time.monotonic()
    try:
        result = await run_shell(
            {"command": f"setsid bash -c 'exec -a {marker} sleep 30' & echo started"},
            context(work, "off"),
        )
        assert result["stdout"] == "started\n"
        assert time.monotonic() - started < 6
        assert left_after(1, marker) == []
    finally:
        for pid in processes_named(marker):
            os.kill(pid, 9)


async def test_an_uncontained_daemon_and_the_process_it_forked_die_when_the_call_is_stopped(work: Path) -> None:
    """A process that left the group and still has a living parent when the call ends (a
    daemon that forked a worker) is reached when that parent is killed: both die."""
    parent, child = f"daemon-{uuid.uuid4().hex}", f"worker-{uuid.uuid4().hex}"
    command = f"setsid bash -c '(exec -a {child} sleep 100) & exec -a {parent} sleep 100' & sleep 50"
    try:
        result = await run_shell({"command": command, "timeout": 1}, context(work, "off"))
        assert result["timed_out"]
        assert left_after(1, parent) == [] and left_after(1, child) == []
    finally:
        for marker in (parent, child):
            for pid in processes_named(marker):
                os.kill(pid, 9)


# -- no sandbox to be had ------------------------------------------------------------------


@pytest.fixture
def no_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process as on a machine without bubblewrap: ``$AGENTWORLD_BWRAP`` names nothing,
    and the cached probe is made again (and again after, with the real one)."""
    monkeypatch.setenv(BWRAP_VARIABLE, "/nonexistent/bwrap")
    bubblewrap_problem.cache_clear()
    try:
        yield
    finally:
        monkeypatch.delenv(BWRAP_VARIABLE)
        bubblewrap_problem.cache_clear()


@pytest.mark.usefixtures("no_bubblewrap")
async def test_on_without_a_sandbox_refuses_and_runs_nothing(work: Path) -> None:
    with pytest.raises(SandboxUnavailable, match="nothing ran"):
        await run_shell({"command": "touch ran"}, context(work, "on"))
    assert not (work / "ran").exists()


@pytest.mark.usefixtures("no_bubblewrap")
async def test_auto_without_a_sandbox_runs_uncontained_and_says_so(work: Path) -> None:
    status = context(work, "auto").containment()
    assert not status.active and status.warning is not None and "UNCONTAINED" in status.warning
    result = await run_shell({"command": "touch ran"}, context(work, "auto"))
    assert result["exit_code"] == 0 and (work / "ran").exists()


def test_bubblewrap_works_on_the_machine_running_the_suite() -> None:
    """The suite runs every containment test for real: none passes because nothing ran."""
    assert bubblewrap_problem() is None, bubblewrap_problem()
    assert sandbox.find_bwrap() is not None


@pytest.mark.parametrize("mode", ["on", "off"])
async def test_a_call_cancelled_at_any_step_of_its_start_leaves_no_descriptor_open(
    work: Path, mode: SandboxMode, caplog: pytest.LogCaptureFixture
) -> None:
    """A stop can land while a call is still setting up its pipes: each is closed once, and
    only once (a second close would take a descriptor number another file now holds)."""
    await run_shell({"command": "true"}, context(work, mode))  # bash found, bubblewrap probed
    before = set(os.listdir("/proc/self/fd"))
    for steps in range(12):
        call = asyncio.ensure_future(run_shell({"command": "sleep 5"}, context(work, mode)))
        for _ in range(steps):
            await asyncio.sleep(0)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
    for _ in range(3):
        await asyncio.sleep(0)  # the transports' last callbacks
    assert set(os.listdir("/proc/self/fd")) - before == set()
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []  # no close of a closed one
