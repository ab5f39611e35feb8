"""The demo and the documentation a new user follows (issue 14): the demo fits 80 columns,
shows the policy's decisions and ends with commands that work; ``docs/cli.md`` names every
command and option; the README and ``docs/cli.md`` walkthroughs run as written.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from agentworld.cli.app import app
from agentworld.cli.demo import TRY_NEXT

ROOT = Path(__file__).resolve().parents[2]
CLI_DOC = ROOT / "docs" / "cli.md"
README = ROOT / "README.md"


def test_the_demo_fits_80_columns_shows_the_policy_and_suggests_three_commands(
    cli: Any,
) -> None:
    shown = cli("demo", env={"COLUMNS": "200"}).stdout
    lines = shown.splitlines()

    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    assert "policy: ALLOW, by rule 'read-only file tools'" in shown
    assert "policy: ASK_USER, by rule" in shown
    assert "approval requested: ops wants to run `touch RELEASED && ls`" in shown
    assert "↳ approved once" in shown
    assert "file RELEASED created: yes" in shown
    # Nothing points at the temporary database, which is gone when the demo ends.
    assert "demo.db" not in shown and "sqlite:" not in shown and "--db" not in shown
    assert [line.strip() for line in lines[-3:]] == list(TRY_NEXT)

    for line in TRY_NEXT:  # they work (here on this test's database rather than the default)
        result = cli(*shlex.split(line)[1:])
    assert "helper: echo: @helper hello" in result.stdout


def test_creating_a_world_that_exists_says_how_to_use_it_or_start_over(cli: Any) -> None:
    cli("world", "create", "Team")

    refused = cli("world", "create", "team", check=False)

    assert refused.code == 1 and refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert line.startswith("error: world 'Team' already exists")
    assert " world show Team), or start over with: agentworld --db " in line
    start_over = shlex.split(line.split("start over with: ")[1])
    assert start_over[-3:] == ["world", "delete", "Team"]
    subprocess.run([sys.executable, "-m", "agentworld", *start_over[1:]], check=True,
                   capture_output=True)  # fmt: skip
    assert cli("world", "create", "team", "--json").json()["name"] == "team"


def _commands() -> list[tuple[str, list[str]]]:
    """Every command of the app (``world create`` …) with its options."""

    def walk(command: Any, path: list[str]) -> list[tuple[str, list[str]]]:
        if hasattr(command, "list_commands"):  # a group: its commands load as they are asked for
            ctx = typer.Context(command)
            names = command.list_commands(ctx)
            return [c for name in names for c in walk(command.get_command(ctx, name), [*path, name])]
        options = [o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
        return [(" ".join(path), options)]

    return walk(typer.main.get_command(app), [])


def _section(doc: str, command: str) -> str:
    """The ``##`` section of ``docs/cli.md`` whose synopsis (a plain ``` block, not a bash
    walkthrough) shows ``agentworld COMMAND``."""
    section, fence = "", None
    for line in doc.splitlines():
        if line.startswith("## "):
            section = line
        elif line.startswith("```"):
            fence = None if fence is not None else line
        elif fence == "```" and re.match(rf"agentworld {re.escape(command)}\b", line):
            start = doc.index(section + "\n")
            end = doc.find("\n## ", start + 1)
            return doc[start : end if end != -1 else len(doc)]
    raise AssertionError(f"no synopsis in docs/cli.md shows `agentworld {command}`")


@pytest.mark.parametrize(("command", "options"), _commands(), ids=lambda v: str(v))
def test_docs_cover_every_command_and_option(command: str, options: list[str]) -> None:
    doc = CLI_DOC.read_text()
    section = _section(doc, command)

    missing = [o for o in options if o not in ("--json", "--help") and o not in section]

    assert not missing, f"docs/cli.md, section of `{command}`, does not mention {missing}"


def test_every_command_is_checked_against_the_docs() -> None:
    names = [name for name, _ in _commands()]
    assert {"messages", "approvals", "demo", "world create", "chat export", "policy test"} <= set(names)
    assert len(names) == len(set(names)) > 30


def test_docs_cover_the_global_options() -> None:
    doc = CLI_DOC.read_text()
    root = typer.main.get_command(app)
    options = [o for p in root.params for o in p.opts if o.startswith("--") and o != "--help"]

    assert options and [o for o in options if o not in doc] == []


def _bash_block(text: str, heading: str) -> str:
    """The first ```bash block after ``heading``."""
    found = re.search(r"```bash\n(.*?)```", text[text.index(heading) :], re.S)
    assert found is not None
    return found[1]


def _as_a_reader(home: Path, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` run with bash, as a reader would paste it: `agentworld` on PATH, the default
    database in ``home``, which is also the current directory."""
    bin_dir = home / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "agentworld"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agentworld "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    for name in ("AGENTWORLD_DB", "OPENAI_API_KEY"):
        env.pop(name, None)
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], cwd=home, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


@pytest.mark.parametrize(
    ("doc", "heading"), [(README, "## Use it\n"), (CLI_DOC, "## A first session\n")],
    ids=["README", "docs/cli.md"],
)  # fmt: skip
def test_the_walkthrough_runs_top_to_bottom_as_written(
    tmp_path: Path, doc: Path, heading: str
) -> None:
    """In a home directory where the demo's suggested commands were tried first."""
    script = "\n".join(TRY_NEXT) + "\n" + _bash_block(doc.read_text(), heading)

    ran = _as_a_reader(tmp_path, script)

    assert ran.returncode == 0, f"{ran.stdout}\n{ran.stderr}"
    assert "error:" not in ran.stderr
    assert (tmp_path / ".agentworld" / "agentworld.db").exists()


def test_the_readme_policy_examples_print_what_they_say_on_the_walkthrough_world(
    tmp_path: Path,
) -> None:
    """The walkthrough, then the Policies section's commands with its rules saved as team.toml:
    each `policy test` prints the decision and rule its comment promises."""
    readme = README.read_text()
    policies = readme[readme.index("### Policies\n") :]
    rules = re.search(r"```toml\n(.*?)```", policies, re.S)
    assert rules is not None
    (tmp_path / "team.toml").write_text(rules[1])
    commands = _bash_block(readme, "### Policies\n")

    ran = _as_a_reader(tmp_path, _bash_block(readme, "## Use it\n") + commands)

    assert ran.returncode == 0, f"{ran.stdout}\n{ran.stderr}"
    promised = re.findall(r"^#\s+((?:ALLOW|DENY|ASK_USER)\s+by .+)$", commands, re.M)
    printed = re.findall(r"^((?:ALLOW|DENY|ASK_USER)\n\s+by .+)$", ran.stdout, re.M)
    assert len(promised) == len(printed) == commands.count("policy test") == 2
    for said, shown in zip(promised, printed, strict=True):
        pattern = r"\s+".join(re.escape(word).replace("…", ".*") for word in said.split())
        assert re.fullmatch(pattern, shown), (said, shown)
    assert "unknown tool" not in ran.stdout
