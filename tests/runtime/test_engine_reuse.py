"""The runtime's authorizer reuses the policy engine it built for the same inputs, and sees
every input change on the next call: a policy file edited on disk, a world setting, an
"always" grant, the admin files named by the environment, another tool."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from agentworld.approval.decisions import Allow, AskUser, Decision, Deny
from agentworld.approval.grants import Grant, PolicyState
from agentworld.models import Agent, World
from agentworld.runtime.authorizer import ADMIN_POLICY_ENV, PolicyAuthorizer
from agentworld.storage.sql import SQLStorage
from agentworld.tools.registry import Tool, ToolContext
from agentworld.tools.world_tools import BUILTIN_TOOLS

READ_FILE = next(tool for tool in BUILTIN_TOOLS if tool.name == "read_file")
NOTE = {"path": "note.txt"}


@pytest.fixture(autouse=True)
def no_admin_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ADMIN_POLICY_ENV, raising=False)


@pytest.fixture
async def storage(db_url: str, tmp_path: Path) -> AsyncIterator[SQLStorage]:
    (tmp_path / "note.txt").write_text("a note\n")
    async with SQLStorage(db_url) as store:
        await store.create_world(World(name="lab", working_dir=str(tmp_path)))
        await store.create_agent(Agent(world="lab", name="a1", provider="openai", model="m"))
        yield store


def rule(decision: str, tool: str = "read_file") -> str:
    return f'[[rule]]\ntoolName = "{tool}"\ndecision = "{decision}"\npriority = 5\n'


async def decide(
    authorizer: PolicyAuthorizer, storage: SQLStorage, world: World, tool: Tool = READ_FILE, *grants: Grant
) -> Decision:
    context = ToolContext(world="lab", chat_id="c1", agent="a1", working_dir=world.working_dir)
    return await authorizer.authorize(tool, NOTE, replace(context, policy=PolicyState(world, grants)))


async def test_the_same_inputs_reuse_one_engine(storage: SQLStorage) -> None:
    authorizer = PolicyAuthorizer(storage)
    world = await storage.get_world("lab")
    first, _, _ = await authorizer.engine_for(world, [READ_FILE], grants=())
    again, _, _ = await authorizer.engine_for(world, [READ_FILE], grants=())
    other_tool, _, _ = await authorizer.engine_for(world, [replace(READ_FILE)], grants=())
    assert again is first
    assert other_tool is not first


async def test_a_policy_file_edited_on_disk_counts_at_the_next_call(
    storage: SQLStorage, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(rule("allow"))
    world = (await storage.get_world("lab")).model_copy(update={"policy_files": [str(policy)]})
    authorizer = PolicyAuthorizer(storage)
    assert isinstance(await decide(authorizer, storage, world), Allow)

    policy.write_text(rule("deny"))  # the same size: the mtime tells
    stamp = policy.stat().st_mtime_ns + 1_000_000_000
    os.utime(policy, ns=(stamp, stamp))
    assert isinstance(await decide(authorizer, storage, world), Deny)


async def test_a_world_setting_counts_at_the_next_call(storage: SQLStorage) -> None:
    authorizer = PolicyAuthorizer(storage)
    world = await storage.get_world("lab")
    assert isinstance(await decide(authorizer, storage, world), Allow)
    excluded = world.model_copy(update={"excluded_tools": ["read_file"]})
    assert isinstance(await decide(authorizer, storage, excluded), Deny)
    assert isinstance(await decide(authorizer, storage, world), Allow)


async def test_an_always_grant_counts_at_the_next_call(storage: SQLStorage, tmp_path: Path) -> None:
    policy = tmp_path / "ask.toml"
    policy.write_text(rule("ask_user"))
    world = (await storage.get_world("lab")).model_copy(update={"policy_files": [str(policy)]})
    authorizer = PolicyAuthorizer(storage)
    assert isinstance(await decide(authorizer, storage, world), AskUser)
    always = Grant(grant_id="g1", world="lab", scope="always", tool_name="read_file", agent="a1", chat_id="c1", roots=frozenset({"note.txt"}))  # fmt: skip
    assert isinstance(await decide(authorizer, storage, world, READ_FILE, always), Allow)
    assert isinstance(await decide(authorizer, storage, world), AskUser)  # revoked: not in force


async def test_admin_files_named_by_the_environment_count_at_the_next_call(
    storage: SQLStorage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    authorizer = PolicyAuthorizer(storage)
    world = await storage.get_world("lab")
    assert isinstance(await decide(authorizer, storage, world), Allow)
    admin = tmp_path / "admin.toml"
    admin.write_text(rule("deny"))
    monkeypatch.setenv(ADMIN_POLICY_ENV, str(admin))
    assert isinstance(await decide(authorizer, storage, world), Deny)


async def test_only_so_many_engines_are_kept(storage: SQLStorage) -> None:
    from agentworld.runtime.authorizer import ENGINES_KEPT

    authorizer = PolicyAuthorizer(storage)
    world = await storage.get_world("lab")
    tools = [replace(READ_FILE) for _ in range(ENGINES_KEPT + 5)]
    for tool in tools:
        assert isinstance(await decide(authorizer, storage, world, tool), Allow)
    assert len(authorizer._engines) == ENGINES_KEPT
