"""A chat's runner whose storage fails under it (a full disk, a table gone): it ends, says why
once in the log, and leaves no stray "Task exception was never retrieved" traceback behind
(found by a black-box run of ``serve`` under ``ulimit -f``). Real SQLite file, real loopback
model server."""

from __future__ import annotations

import asyncio
import gc
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.testing.openai_wire import OpenAIWireServer, Reply


async def test_a_runner_whose_storage_fails_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "w.db"
    asked = threading.Event()
    answer_now = threading.Event()

    def answer(body: dict[str, Any]) -> Reply:
        asked.set()
        answer_now.wait(30)
        return Reply.text("an answer")

    caplog.set_level(logging.DEBUG)
    with OpenAIWireServer(responder=answer) as server:
        async with AgentWorld(f"sqlite:///{path}") as aw:
            await aw.create_world("w", working_dir=str(tmp_path))
            await aw.create_agent("w", "a1", provider="openai", model="m", base_url=server.base_url)
            chat = (await aw.new_chat("w")).chat_id
            runtime = await aw.runtime("w")
            await runtime.send(chat, "@a1 hi")
            await asyncio.to_thread(asked.wait, 30)
            with sqlite3.connect(path) as other:  # the table every release writes to, gone
                other.execute("DROP TABLE chat_leases")
            answer_now.set()
            for _ in range(500):
                if runtime.is_idle(chat):
                    break
                await asyncio.sleep(0.02)
            assert runtime.is_idle(chat)
            gc.collect()

    stopped = [r for r in caplog.records if "stopped running" in r.getMessage()]
    assert len(stopped) == 2  # the line, and its traceback at debug level
    assert stopped[0].levelno == logging.ERROR and "no such table" in stopped[0].getMessage()
    assert chat in stopped[0].getMessage()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
