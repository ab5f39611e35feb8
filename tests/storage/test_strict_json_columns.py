"""What the stores write to a JSON column is JSON proper on both backends: a ``NaN`` or an
``Infinity`` that reaches a store (from the Python API, a hook, a tool server) goes in as the
string it is spelled as, instead of failing the write on PostgreSQL (whose JSON type refuses the
word) or, on SQLite, being stored as text no other reader parses."""

from __future__ import annotations

import math

from agentworld.models import World
from agentworld.models.records import AuditEntry
from agentworld.storage.sql import SQLStorage


async def test_a_non_finite_number_is_stored_as_its_word(both_backends_url: str) -> None:
    async with SQLStorage(both_backends_url) as storage:
        await storage.create_world(World(name="lab"))
        arguments = {"command": "sleep 1", "timeout": math.nan, "limits": [math.inf, -math.inf, 2.5]}
        await storage.approvals.audit(
            "lab", AuditEntry(event="request", actor="a1", tool_name="shell_cmd", tool_args=arguments)
        )
        seq = await storage.tool_logs.start(
            world="lab", chat_id="c1", agent="a1", tool_call_id="call_1", tool_name="shell_cmd",
            arguments=arguments,
        )
        await storage.tool_logs.finish(seq, status="ok", output={"took": math.inf}, duration_ms=1.0)

        (entry,) = await storage.approvals.audit_log("lab")
        (log,) = await storage.tool_logs.find("lab")

    stored = {"command": "sleep 1", "timeout": "NaN", "limits": ["Infinity", "-Infinity", 2.5]}
    assert entry.tool_args == stored
    assert log.input == stored and log.output == {"took": "Infinity"}
