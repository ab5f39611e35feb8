"""Every script in examples/ runs offline and asserts its own outcome (SPEC I1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_and_its_assertions_hold(script: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
