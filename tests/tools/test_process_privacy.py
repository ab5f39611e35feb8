"""The runtime marks itself not dumpable before it starts a tool, so a tool running as the
same user cannot read the keys in the runtime's ``/proc/<pid>/environ`` (``grep -a sk-
/proc/*/environ | base64`` would get past any output masking).

Real processes: one holds a key in its environment, another of the same user tries to read
it. Root reads any process (``CAP_SYS_PTRACE``), so as root both run as ``nobody``.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentworld.tools.process_privacy as privacy
from agentworld.tools.builtin.definitions import SHELL_TOOL
from agentworld.tools.executor import run_tool
from agentworld.tools.registry import ToolContext

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")
KEY = "sk-testkey-PRIVATE0123456789"
HOLDER = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("privacy", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(module.keep_process_private() if sys.argv[2] == "private" else "open", flush=True)
time.sleep(30)
"""


NOBODY: int | None = 65534 if os.geteuid() == 0 else None
"""Who runs both processes: ``nobody`` when this is root (root may read any process), else
None (as we are)."""


def _python() -> str:
    """An interpreter ``nobody`` may run (the test's own may live under /root)."""
    if os.geteuid() != 0:
        return sys.executable
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK) and subprocess.run(
            [candidate, "-c", "pass"], capture_output=True, check=False, user=NOBODY, group=NOBODY
        ).returncode == 0:
            return candidate
    pytest.skip("no Python that user nobody may run")


def _read_environ_of_a_holder(mode: str) -> subprocess.CompletedProcess[str]:
    module = str(Path(privacy.__file__).resolve())
    with subprocess.Popen(
        [_python(), "-I", "-S", "-c", HOLDER, module, mode],
        env={"OPENAI_API_KEY": KEY}, stdout=subprocess.PIPE, text=True, cwd="/", user=NOBODY, group=NOBODY,
    ) as holder:  # fmt: skip
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == ("True" if mode == "private" else "open")
            return subprocess.run(
                ["cat", f"/proc/{holder.pid}/environ"],
                capture_output=True, text=True, check=False, cwd="/", user=NOBODY, group=NOBODY,
            )  # fmt: skip
        finally:
            holder.kill()


def test_a_process_of_the_same_user_reads_an_ordinary_processs_environment() -> None:
    assert KEY in _read_environ_of_a_holder("open").stdout


def test_it_cannot_read_the_environment_of_a_process_kept_private() -> None:
    read = _read_environ_of_a_holder("private")
    assert KEY not in read.stdout
    assert read.returncode != 0


async def test_running_a_shell_command_leaves_this_process_private(tmp_path: Path) -> None:
    context = ToolContext(world="w", chat_id="c", agent="a", working_dir=str(tmp_path))
    result = await run_tool(SHELL_TOOL, "c1", {"command": "echo hi"}, context)
    assert json.loads(result.content)["stdout"] == "hi\n"
    libc = ctypes.CDLL(None)
    assert libc.prctl(privacy.PR_GET_DUMPABLE, 0, 0, 0, 0) == 0
