"""Durable chats run against both backends: a SQLite file, and a database of its own on the
session's real PostgreSQL server (``postgres_server`` in ``tests/conftest.py``)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from agentworld.testing.postgres import create_database

_numbers = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Overrides the suite's SQLite-only ``db_url``: every test here runs on both backends."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'agentworld.db'}"
    server = request.getfixturevalue("postgres_server")
    return create_database(server, f"t{os.getpid()}_{next(_numbers)}")
