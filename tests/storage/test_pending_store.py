"""Waiting calls round-trip through storage as their typed case; the ``detail`` column keeps its JSON form."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentworld.models import World
from agentworld.models.pending import PendingApproval, PendingClientCall, ShellDisplay
from agentworld.storage.connection import Connection
from agentworld.storage.sql import SQLStorage
from agentworld.storage.statement import Sql

COMMON = {
    "world": "lab",
    "chat_id": "c1",
    "agent": "a1",
    "tool_name": "shell_cmd",
    "arguments": '{"command": "rm x"}',
    "batch_id": "msg_1",
    "trigger_sender": "human",
}
SHELL = {
    "commandLine": "rm x",
    "directory": "/work",
    "commands": ["rm x"],
    "understood": True,
    "note": "",
}


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SQLStorage]:
    async with SQLStorage(db_url) as store:
        await store.create_world(World(name="lab"))
        yield store


def approval(call_id: str, *, shell: ShellDisplay | None) -> PendingApproval:
    return PendingApproval(
        **COMMON,
        tool_call_id=call_id,
        original_call_id="call_1",
        request_message_id="msg_2",
        message="run `rm x`?",
        tool_args={"command": "rm x"},
        shell=shell,
    )


async def stored_detail(storage: SQLStorage, call_id: str) -> object:
    query = Sql(
        "SELECT detail FROM pending_calls WHERE tool_call_id = :call_id", columns={"detail": "json"}
    )

    def read(conn: Connection) -> object:
        return conn.execute(query, {"call_id": call_id}).scalar_one()

    return await storage.in_transaction(read, write=False)


async def test_each_kind_reads_back_as_its_own_class_with_every_field(storage: SQLStorage) -> None:
    with_shell = approval("ap_1", shell=ShellDisplay.model_validate(SHELL))
    without_shell = approval("ap_2", shell=None)
    client = PendingClientCall(**COMMON, tool_call_id="cl_1")
    await storage.pending.add([with_shell, without_shell, client])

    assert await storage.pending.get("lab", "ap_1") == with_shell
    assert await storage.pending.get("lab", "ap_2") == without_shell
    assert await storage.pending.get("lab", "cl_1") == client
    assert await storage.pending.find("lab", kind="approval") == [with_shell, without_shell]
    assert await storage.pending.find("lab", kind="client") == [client]


async def test_the_detail_column_keeps_the_stored_json_form(storage: SQLStorage) -> None:
    await storage.pending.add(
        [
            approval("ap_1", shell=ShellDisplay.model_validate(SHELL)),
            approval("ap_2", shell=None),
            PendingClientCall(**COMMON, tool_call_id="cl_1"),
        ]
    )

    legacy = {
        "originalCallId": "call_1",
        "requestMessageId": "msg_2",
        "message": "run `rm x`?",
        "toolArgs": {"command": "rm x"},
    }
    assert await stored_detail(storage, "ap_1") == {**legacy, "shell": SHELL}
    assert await stored_detail(storage, "ap_2") == legacy
    assert await stored_detail(storage, "cl_1") == {}
