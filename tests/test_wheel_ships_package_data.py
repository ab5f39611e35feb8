"""The wheel holds every file of the package, not only its modules: the templates `init`
writes, the shipped policy rules and the web UI's assets are read at run time from the
installed package."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "src" / "agentworld"


def _package_files() -> set[str]:
    return {
        "agentworld/" + path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def test_the_wheel_holds_every_file_of_the_package(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("agentworld-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    expected = _package_files()
    data = {name for name in expected if not name.endswith(".py")}
    assert {
        "agentworld/templates/release-team.toml",
        "agentworld/templates/code-review.toml",
        "agentworld/policy/defaults.toml",
        "agentworld/policy/sandboxed_defaults.toml",
        "agentworld/webui/static/index.html",
    } <= data
    assert any(name.startswith("agentworld/templates/release-team/") for name in data)
    assert sorted(expected - names) == []
