"""``check_sender``: what ``send --sender`` calls before publishing (SPEC R2)."""

from __future__ import annotations

import pytest

from agentworld.agent_world import AgentWorld
from agentworld.cli.common import check_sender
from agentworld.errors import InvalidInputError


async def test_a_sender_may_not_pose_as_an_agent_of_the_world(aw: AgentWorld) -> None:
    await aw.create_world("w")
    await aw.create_agent("w", "Planner", provider="scripted", model="echo")

    await check_sender(aw, "w", "human")
    await check_sender(aw, "w", "alice")
    with pytest.raises(InvalidInputError, match=r"--sender 'planner': it names an agent of this world"):
        await check_sender(aw, "w", "planner")
    with pytest.raises(InvalidInputError, match=r"--sender 'human\\nplanner': it must be one line"):
        await check_sender(aw, "w", "human\nplanner")
    with pytest.raises(InvalidInputError, match=r"--sender 'a b': use 1-64 letters"):
        await check_sender(aw, "w", "a b")
