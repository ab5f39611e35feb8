"""Every line a permissive policy ALLOWs runs contained (SPEC C1; a differential
check): run with the sandbox on, it changes nothing outside the working directory.

The policy file allows the programs these lines use, redirections included, as a hurried
owner might. Each line reaches for something outside the box — a sibling directory, the
home's shell profile and SSH keys, a symlink out, a copy or move out, a background job that
writes later — and after it ran (and after its background work had time to act) the tree
outside is exactly as it was. The outside tree lies in a directory the sandbox does not hide
(beside the checkout, where the suite runs), so what stops a write is the read-only system,
not a path that happens to be missing inside.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentworld.policy.engine import PolicyEngine
from agentworld.policy.loader import load_policy_text
from agentworld.policy.rules import PolicyDecision
from agentworld.tools.builtin.shell import run_shell
from agentworld.tools.registry import ToolContext

PERMISSIVE = """
[[rule]]
toolName = "shell_cmd"
commandPrefix = ["echo", "cat", "cp", "mv", "rm", "touch", "mkdir", "ln", "tee", "printf",
                 "sleep", "chmod", "truncate", "dd", "sed", "find", "ls", "true"]
allowRedirection = true
decision = "allow"
priority = 500
"""

LINES = [
    "echo x > {outside}/new",
    "echo x >> {outside}/kept",
    "cat secret >> ~/.bashrc",
    "cat secret >> {home}/.bashrc",
    "cat {home}/.ssh/id_rsa > stolen",
    "cp secret {outside}/copied",
    "mv secret {outside}/moved; true",
    "rm -f {outside}/kept",
    "rm -rf {outside}",
    "touch {outside}/touched",
    "mkdir -p {outside}/made",
    "ln -s {outside} link && echo x > link/through",
    "ln {outside}/kept hard; echo x >> hard",
    "tee {outside}/teed < secret",
    "printf x > {outside}/kept",
    "chmod 777 {outside}/kept",
    "truncate -s 0 {outside}/kept",
    "dd if=secret of={outside}/kept",
    "sed -i s/kept/gone/ {outside}/kept",
    "find {outside} -name kept -delete",
    "echo x > /usr/agentworld-differential",
    "(sleep 1; echo late > {outside}/late) &",
    "(sleep 1; rm -rf {outside}) > /dev/null 2>&1 &",
    "echo x > ../escaped",
    "cat secret > /tmp/x && cp /tmp/x {outside}/via-tmp",
]


def snapshot(root: Path) -> dict[str, tuple[int, str]]:
    """Every path under ``root`` with its mode and content digest."""
    found: dict[str, tuple[int, str]] = {}
    for path in sorted(root.rglob("*")):
        stat = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        found[str(path.relative_to(root))] = (stat.st_mode, digest)
    return found


@pytest.fixture
def outside() -> Iterator[Path]:
    """A tree outside the working directory, in a place the sandbox shows read-only."""
    root = Path(tempfile.mkdtemp(prefix=".agentworld-outside-", dir=os.getcwd()))
    try:
        (root / "kept").write_text("kept\n")
        (root / "home" / ".ssh").mkdir(parents=True)
        (root / "home" / ".ssh" / "id_rsa").write_text("PRIVATE-KEY\n")
        (root / "home" / ".bashrc").write_text("# profile\n")
        yield root
    finally:
        shutil.rmtree(root)


def test_every_allowed_line_leaves_everything_outside_the_working_directory_as_it_was(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = outside / "home"
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    engine = PolicyEngine(load_policy_text(PERMISSIVE, source="permissive.toml").rules)
    lines = [line.format(outside=outside, home=home) for line in LINES]
    refused = [
        line for line in lines
        if engine.evaluate("shell_cmd", {"command": line}).decision is not PolicyDecision.ALLOW
    ]
    assert refused == []  # every line here is one the policy lets run
    before = snapshot(outside)
    context = ToolContext(world="w", chat_id="c", agent="a", working_dir=str(work), sandbox="on")

    async def run_all() -> None:
        for line in lines:
            (work / "secret").write_text("SECRET\n")
            await run_shell({"command": line, "timeout": 5}, context)

    asyncio.run(run_all())
    asyncio.run(asyncio.sleep(1.5))  # past the background jobs' sleep
    assert snapshot(outside) == before
    assert not Path("/usr/agentworld-differential").exists()
    stolen = work / "stolen"
    assert not stolen.exists() or "PRIVATE-KEY" not in stolen.read_text()


def test_the_same_lines_uncontained_do_reach_outside(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: without the sandbox these lines change the tree outside, so the check
    above measures the sandbox."""
    home = outside / "home"
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    before = snapshot(outside)
    context = ToolContext(world="w", chat_id="c", agent="a", working_dir=str(work), sandbox="off")
    for line in ("echo x > {outside}/new", "cat secret >> ~/.bashrc"):
        (work / "secret").write_text("SECRET\n")
        asyncio.run(run_shell({"command": line.format(outside=outside), "timeout": 5}, context))
    after = snapshot(outside)
    assert after != before
    assert "new" in after and (home / ".bashrc").read_text().endswith("SECRET\n")
