"""The JSON documents built from the log records (``documents``): the keys, their order and
the value formats are the contract the CLI's ``--json`` and the HTTP API share."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from agentworld.documents import audit_doc, tool_log_doc
from agentworld.models.records import AuditEntry, ToolLogEntry


def test_an_audit_entry_document_keeps_its_keys_in_order_and_its_time_in_utc_ending_in_z() -> None:
    entry = AuditEntry(
        at=datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        event="decision",
        actor="human",
        approval_id="approval_1",
        agent="a1",
        chat_id="chat_1",
        tool_name="shell_cmd",
        tool_args={"command": "ls"},
        decision="approve",
        scope="session",
        latency_ms=12.5,
        detail={"message": "run ls?"},
    )

    assert json.dumps(audit_doc(entry)) == (
        '{"at": "2026-01-02T03:04:05.123456Z", "event": "decision", "actor": "human", '
        '"approvalId": "approval_1", "agent": "a1", "chatId": "chat_1", "toolName": "shell_cmd", '
        '"toolArgs": {"command": "ls"}, "decision": "approve", "scope": "session", '
        '"latencyMs": 12.5, "detail": {"message": "run ls?"}}'
    )


def test_a_tool_log_document_keeps_its_keys_in_order_and_a_running_call_has_no_finish() -> None:
    entry = ToolLogEntry(
        seq=7,
        tool_call_id="call_1",
        tool_name="read_file",
        agent="a1",
        chat_id="chat_1",
        input={"path": "a.txt"},
        output=None,
        status="running",
        started_at=datetime(2026, 1, 2, 3, 4, 5),  # naive times read back are UTC
        finished_at=None,
        duration_ms=None,
        runner="host:42",
    )

    assert json.dumps(tool_log_doc(entry)) == (
        '{"toolCallId": "call_1", "toolName": "read_file", "agent": "a1", "chatId": "chat_1", '
        '"input": {"path": "a.txt"}, "output": null, "status": "running", '
        '"startedAt": "2026-01-02T03:04:05Z", "finishedAt": null, "durationMs": null, '
        '"runner": "host:42", "seq": 7}'
    )
