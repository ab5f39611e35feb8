"""A world file's plan is stored in one transaction: when its last step is refused by the
database's own state, nothing of it is left, on SQLite and on PostgreSQL."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.errors import BusyError
from agentworld.storage.statement import Sql
from agentworld.world_apply import apply_file
from agentworld.world_file import parse_world_text

_WORK = Sql(
    "INSERT INTO chat_inbox (world, chat_id, position, work, created_at)"
    " VALUES ('team', :chat_id, 1, :work, '2024-01-01T00:00:00+00:00')",
    json_params=("work",),
)
_CLAIM = Sql(
    "INSERT INTO chat_leases (world, chat_id, owner, expires_at)"
    " VALUES ('team', :chat_id, 'elsewhere:4242:1:r', :expires_at)"
)
_LAPSE = Sql("UPDATE chat_leases SET expires_at = :expires_at")

FILE = """
[world]
name = "team"
turnLimit = 9

[[agents]]
name = "writer"
provider = "scripted"
model = "echo"
systemPrompt = "Write it twice."

[[agents]]
name = "newcomer"
provider = "scripted"
model = "echo"

[[rules]]
toolName = "shell_cmd"
decision = "deny"
priority = 5
"""


async def test_a_plan_refused_at_its_last_step_leaves_the_world_as_it_was(db_url: str, tmp_path: Path) -> None:
    async with AgentWorld(db_url) as aw:
        await aw.create_world("team", working_dir=str(tmp_path), turn_limit=3)
        await aw.create_agent("team", "writer", provider="scripted", model="echo", system_prompt="Write it.")
        await aw.create_agent("team", "busy", provider="scripted", model="echo")
        chat = await aw.current_chat("team")
        # Another host's process is answering as `busy` in the chat: deleting that agent is
        # refused by the database's own state, inside the transaction.
        params = {"chat_id": chat, "work": {"kind": "turn", "agent": "busy"}, "expires_at": time.time() + 600}
        await aw.storage.in_transaction(lambda conn: (conn.execute(_WORK, params), conn.execute(_CLAIM, params)), write=True)
        wanted = parse_world_text(FILE, tmp_path / "team.toml", tmp_path)
        before = (await aw.get_world("team"), await aw.list_agents("team"))

        planned = await apply_file(aw, wanted, dry_run=True, prune=True)
        assert [(c.action, c.kind, c.name) for c in planned.changes][-2:] == [
            ("delete", "agent", "busy"), ("create", "rule", "#1 deny shell_cmd")]
        with pytest.raises(BusyError, match="busy"):
            await apply_file(aw, wanted, dry_run=False, prune=True)

        assert (await aw.get_world("team"), await aw.list_agents("team")) == before
        world = await aw.get_world("team")
        assert world.turn_limit == 3 and world.policy_rules == []
        assert [(a.name, a.system_prompt) for a in await aw.list_agents("team")] == [("writer", "Write it."), ("busy", "")]

        await aw.storage.in_transaction(lambda conn: conn.execute(_LAPSE, {"expires_at": time.time() - 1}), write=True)
        await apply_file(aw, wanted, dry_run=False, prune=True)
        world = await aw.get_world("team")
        assert world.turn_limit == 9 and world.policy_rules[0]["toolName"] == "shell_cmd"
        assert sorted(a.name for a in await aw.list_agents("team")) == ["newcomer", "writer"]
        assert (await apply_file(aw, wanted, dry_run=True, prune=True)).changes == []
