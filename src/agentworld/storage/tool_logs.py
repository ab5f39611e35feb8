"""Tool logs (SPEC E4): every execution's input, output, timing and status.

The start is written before the tool runs, so a crash mid-run leaves a
``running`` row behind: evidence that the call may have had effects, which the
process that resumes the chat reports as interrupted instead of running it twice.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypedDict, Unpack

from agentworld.models import utc_now
from agentworld.models.events import WorldEvent
from agentworld.models.records import ToolLogEnd, ToolLogEntry, ToolLogStatus
from agentworld.models.work import InboxChange
from agentworld.storage.connection import Connection, Row
from agentworld.storage.event_log import event_row, insert_log_rows
from agentworld.storage.inbox import apply_change
from agentworld.storage.rows import row_record
from agentworld.storage.statement import ColumnKind, Sql

if TYPE_CHECKING:
    from agentworld.storage.core import StorageCore

START: Final = Sql(
    "INSERT INTO tool_logs (world, chat_id, agent, tool_call_id, tool_name, input, status,"
    " started_at, runner) VALUES (:world, :chat_id, :agent, :tool_call_id, :tool_name, :input,"
    " :status, :started_at, :runner) RETURNING seq",
    json_params=("input",),
)
"""The row of an execution that starts (``log_start_row``); gives the log's id."""
_COLUMNS: Final = (
    "tool_logs.seq, tool_logs.world, tool_logs.chat_id, tool_logs.agent, tool_logs.tool_call_id,"
    " tool_logs.tool_name, tool_logs.input, tool_logs.output, tool_logs.status,"
    " tool_logs.started_at, tool_logs.finished_at, tool_logs.duration_ms, tool_logs.runner"
)
_JSON_COLUMNS: Final[Mapping[str, ColumnKind]] = {"input": "json", "output": "json"}
RUNNING: Final = Sql(
    f"SELECT {_COLUMNS} FROM tool_logs"
    " WHERE tool_logs.world = :world_key AND tool_logs.status = :status_key ORDER BY tool_logs.seq",
    columns=_JSON_COLUMNS,
)
"""A world's executions in one status (``status_key``): those ``running`` never finished."""
_FINISH: Final = Sql(
    "UPDATE tool_logs SET status = :new_status, output = :new_output,"
    " finished_at = :new_finished_at, duration_ms = :new_duration_ms WHERE seq = :seq_key",
    json_params=("new_output",),
)
"""How an execution ended (``finish_log``): every tool call runs it, as it runs ``START``."""
_STARTED: Final = Sql(
    "SELECT seq FROM tool_logs WHERE world = :world AND tool_call_id = :tool_call_id LIMIT 1"
)
_INTERRUPT: Final = Sql(
    "UPDATE tool_logs SET status = 'interrupted', output = :output, finished_at = :finished_at"
    " WHERE world = :world AND tool_call_id = :tool_call_id AND status = 'running'",
    json_params=("output",),
)


def runner_id() -> str:
    """This process, as recorded on the tool calls it runs."""
    return f"{socket.gethostname()}:{os.getpid()}"


def runner_alive(runner: str | None) -> bool:
    """Whether the process that started a tool may still be running it.

    Only a runner on this host can be checked; one elsewhere is assumed alive, so a call is
    never reported interrupted while another machine may be running it.
    """
    if not runner:
        return False
    host, _, pid = runner.rpartition(":")
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def _entry(row: Row) -> ToolLogEntry:
    # ``status`` is written only as ``ToolLogStatus`` (``log_start_row``, ``finish``,
    # ``interrupt``), so it is taken as it is.
    return row_record(
        ToolLogEntry,
        row,
        started_at=datetime.fromisoformat(row.started_at),
        finished_at=datetime.fromisoformat(row.finished_at) if row.finished_at else None,
    )


def finish_log(conn: Connection, end: ToolLogEnd) -> None:
    """Record how an execution ended, inside the caller's transaction."""
    conn.execute(
        _FINISH,
        {
            "seq_key": end.seq,
            "new_status": end.status,
            "new_output": end.output,
            "new_finished_at": utc_now().isoformat(),
            "new_duration_ms": round(end.duration_ms, 3),
        },
    )


class LoggedCall(TypedDict):
    """The call an execution runs (the keywords of ``ToolLogStore.start``)."""

    world: str
    chat_id: str
    agent: str
    tool_call_id: str
    tool_name: str
    arguments: Any
    """What the tool runs with, secrets redacted: the log's ``input``."""


def log_start_row(**call: Unpack[LoggedCall]) -> dict[str, Any]:
    """The row of an execution that starts now, in this process: the call, its ``arguments``
    as the ``input``."""
    row: dict[str, Any] = {
        **call, "status": "running", "started_at": utc_now().isoformat(), "runner": runner_id()
    }
    row["input"] = row.pop("arguments")
    return row


class ToolLogStore:
    def __init__(self, storage: StorageCore) -> None:
        self._storage = storage

    async def start(
        self,
        *,
        inbox: InboxChange | None = None,
        events: Sequence[WorldEvent] = (),
        **call: Unpack[LoggedCall],
    ) -> int:
        """Record that a call starts running — with ``inbox`` marking its work item started,
        and ``events`` (its ``tool`` start) in the event log, in the same transaction — and
        return the log's id."""
        logged = [event_row(e) for e in events]
        row = log_start_row(**call)

        def insert(conn: Connection) -> int:
            insert_log_rows(conn, logged)
            result = conn.execute(START, row)
            apply_change(conn, call["world"], inbox)
            return int(result.scalar_one())

        return await self._storage.in_transaction(insert, write=True)

    async def running(self, world: str) -> list[ToolLogEntry]:
        """Executions that started and never finished."""

        def read(conn: Connection) -> list[ToolLogEntry]:
            return [_entry(r) for r in conn.execute(RUNNING, {"world_key": world, "status_key": "running"})]

        return await self._storage.in_transaction(read, write=False)

    async def interrupt(self, world: str, tool_call_id: str, *, reason: str) -> bool:
        """Mark a call's unfinished executions interrupted (their process stopped); true when
        the call had started at all — it may or may not have had its effect."""
        call = {"world": world, "tool_call_id": tool_call_id}
        values = {**call, "output": {"error": reason}, "finished_at": utc_now().isoformat()}

        def update(conn: Connection) -> bool:
            started = conn.execute(_STARTED, call).first()
            conn.execute(_INTERRUPT, values)
            return started is not None

        return await self._storage.in_transaction(update, write=True)

    async def finish(
        self, seq: int, *, status: ToolLogStatus, output: Any, duration_ms: float
    ) -> None:
        end = ToolLogEnd(seq, status, output, duration_ms)

        def update(conn: Connection) -> None:
            finish_log(conn, end)

        await self._storage.in_transaction(update, write=True)

    async def find(
        self, world: str, *, chat_id: str | None = None, tool_call_id: str | None = None
    ) -> list[ToolLogEntry]:
        """The world's executions (of one chat, of one call), in the order they started."""
        query = _find_statement(chat_id is not None, tool_call_id is not None)
        params = {"world": world, "chat_id": chat_id, "tool_call_id": tool_call_id}

        def read(conn: Connection) -> list[ToolLogEntry]:
            return [_entry(r) for r in conn.execute(query, params)]

        return await self._storage.in_transaction(read, write=False)


@functools.cache
def _find_statement(by_chat: bool, by_call: bool) -> Sql:
    """``ToolLogStore.find``'s query for one combination of filters, built once."""
    where = ["world = :world"]
    if by_chat:
        where.append("chat_id = :chat_id")
    if by_call:
        where.append("tool_call_id = :tool_call_id")
    return Sql(
        f"SELECT {_COLUMNS} FROM tool_logs WHERE {' AND '.join(where)} ORDER BY seq",
        columns=_JSON_COLUMNS,
    )
