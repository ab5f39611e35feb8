"""``agent create --model-deadline N``: a model server that accepts the connection and never
answers ends the turn within N seconds, with a visible system event and a system line in the
chat, and ``send`` exits on time (SPEC L5). A real loopback socket that never writes a byte,
the CLI in a subprocess with three attempts per call."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentworld.storage.event_log import EventLog
from agentworld.storage.sql import SQLStorage
from agentworld.testing.silent import silent_server

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)


@pytest.fixture
def silent_url() -> Iterator[str]:
    """``http://127.0.0.1:PORT/v1``: accepts every connection and answers nothing."""
    with silent_server() as port:
        yield f"http://127.0.0.1:{port}/v1"


def _system_events(db_url: str) -> list[str]:
    """The texts of world ``w``'s system events, as its event log holds them."""

    async def read() -> list[str]:
        async with SQLStorage(db_url) as storage:
            batch = await EventLog(storage).after("w", 0)
        return [str(e.document.get("text")) for e in batch.events if e.kind == "system"]

    return asyncio.run(read())


def test_a_silent_model_ends_the_turn_with_a_system_event_within_the_deadline(
    cli: Any, db_url: str, tmp_path: Path, silent_url: str
) -> None:
    cli("world", "create", "w", "--working-dir", str(tmp_path))
    created = cli(
        "agent", "create", "w", "a", "--provider", "openai-compatible", "--model", "m",
        "--base-url", silent_url, "--model-deadline", "3", "--json",
    ).json()
    assert created["modelDeadlineSeconds"] == 3

    started = time.monotonic()
    sent = cli("send", "w", "@a hello", "--json", check=False, env={"AGENTWORLD_LLM_RETRIES": "3"}, timeout=30)
    elapsed = time.monotonic() - started

    assert elapsed < 3 + 5  # the deadline, plus the CLI's start-up and shut-down
    assert sent.code != 0
    said = "Error from a: the model did not answer within 3 s (modelDeadlineSeconds)"
    assert said in sent.stdout + sent.stderr
    transcript = cli("messages", "w", "--json").json()["messages"]
    assert [(m["role"], m["content"]) for m in transcript][-1] == ("system", said)
    assert any(said in event for event in _system_events(db_url))


def test_a_deadline_that_is_not_a_positive_whole_number_of_seconds_is_refused(cli: Any, tmp_path: Path) -> None:
    cli("world", "create", "w", "--working-dir", str(tmp_path))
    for value in ("0", "-5", "soon"):
        refused = cli(
            "agent", "create", "w", "a", "--provider", "scripted", "--model", "echo",
            "--model-deadline", value, check=False,
        )
        assert refused.code == 2 and "--model-deadline" in refused.stderr
