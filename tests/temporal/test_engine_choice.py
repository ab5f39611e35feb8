"""The engine is chosen by AGENTWORLD_TEMPORAL: without it nothing loads temporalio and chats run
in the process; `agentworld worker` refuses to start without it or without a reachable service."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from agentworld.runtime.engine import TemporalSettings, workflow_id
from agentworld.testing.openai_wire import OpenAIWireServer


def test_the_settings_come_from_the_environment() -> None:
    assert TemporalSettings.from_env({}) is None
    assert TemporalSettings.from_env({"AGENTWORLD_TEMPORAL": " "}) is None
    assert TemporalSettings.from_env({"AGENTWORLD_TEMPORAL": "t:7233"}) == TemporalSettings("t:7233")
    given = {
        "AGENTWORLD_TEMPORAL": "t:7233",
        "AGENTWORLD_TEMPORAL_NAMESPACE": "ns",
        "AGENTWORLD_TEMPORAL_TASK_QUEUE": "q",
    }
    assert TemporalSettings.from_env(given) == TemporalSettings("t:7233", "ns", "q")
    assert workflow_id("w", "chat_1") == "agentworld:w:chat_1"


def test_a_process_without_the_variable_runs_chats_itself_and_never_imports_temporalio(
    db_url: str, server: OpenAIWireServer, tmp_path: Path
) -> None:
    program = textwrap.dedent(f"""
        import asyncio, sys
        from agentworld import AgentWorld

        async def main():
            async with AgentWorld({db_url!r}) as aw:
                await aw.create_world("w")
                await aw.create_agent("w", "a1", provider="openai", model="m",
                                      base_url={server.base_url!r}, system_prompt="agent:a1")
                sent = await aw.send("w", "@a1 hi")
                print(sent.messages[-1].content)
            print("temporalio" in sys.modules, any(m.startswith("temporalio") for m in sys.modules))

        asyncio.run(main())
    """)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "AGENTWORLD_LLM_RETRIES": "1"}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["a1 heard: @a1 hi", "False False"]


def test_a_worker_needs_the_variable_and_a_reachable_service(cli: Any) -> None:
    missing = cli("worker", check=False)
    assert missing.code == 1
    assert missing.stderr.startswith("error: AGENTWORLD_TEMPORAL is not set")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once closed
    unreachable = cli("worker", check=False, env={"AGENTWORLD_TEMPORAL": f"127.0.0.1:{port}"}, timeout=90)
    assert unreachable.code == 1
    assert unreachable.stderr.startswith(f"error: cannot reach Temporal at 127.0.0.1:{port}"), unreachable.stderr
