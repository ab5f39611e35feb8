"""The public API is exactly what ``agentworld.__all__`` lists, and every name resolves."""

from __future__ import annotations

import subprocess
import sys

import agentworld


def test_all_exports_resolve_to_public_objects() -> None:
    for name in agentworld.__all__:
        member = getattr(agentworld, name)
        assert member is not None
        assert not name.startswith("_")
    assert sorted(agentworld.__all__) == sorted(agentworld._EXPORTS)


def test_unknown_attribute_raises() -> None:
    try:
        agentworld.DoesNotExist  # noqa: B018
    except AttributeError as exc:
        assert "DoesNotExist" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_importing_the_cli_does_not_import_sqlalchemy_or_sdks() -> None:
    code = (
        "import sys, agentworld.cli.app; "
        "print(sorted(m for m in ('sqlalchemy', 'openai', 'aiosqlite') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
