"""Every hint that names a command is ready to paste: on a database that is not the one a new
command would use anyway, it names it with ``--db`` (docs/cli.md, "Text output").

Real ``agentworld`` processes on a real SQLite file; a slow agent on the loopback OpenAI wire
server, so a ``--timeout`` surely runs out first.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from agentworld.testing.openai_wire import OpenAIWireServer, Reply


def test_send_that_stops_waiting_names_the_resume_command_with_its_database(
    cli: Any, db_url: str, script: Any, server: OpenAIWireServer
) -> None:
    script.by_agent["client"] = lambda body: Reply.text("late", delay=2.0)
    cli("world", "create", "rw", "--no-streaming")
    cli("agent", "create", "rw", "client", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:client")  # fmt: skip

    stopped = cli("send", "rw", "@client hi", "--timeout", "0.2", check=False)

    assert stopped.code == 1
    (hint,) = re.findall(r"\(e\.g\. `([^`]+)`\)", stopped.stderr)
    assert shlex.split(hint) == ["agentworld", "--db", db_url, "resume", "rw"]


def test_world_create_with_a_main_agent_names_the_update_command_with_its_database(
    cli: Any, db_url: str
) -> None:
    refused = cli("world", "create", "x2", "--main-agent", "y", check=False)

    assert refused.code == 1
    hint = refused.stderr.split("then run: ", 1)[1]
    assert shlex.split(hint) == ["agentworld", "--db", db_url, "world", "update", "x2", "--main-agent", "y"]
