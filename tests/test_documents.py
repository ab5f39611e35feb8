"""The JSON documents built from the log records (``documents``): the keys, their order and
the value formats are the contract the CLI's ``--json`` and the HTTP API share."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from agentworld.approval.grants import Grant
from agentworld.documents import (
    approval_answer,
    approval_doc,
    audit_doc,
    chat_doc,
    grant_doc,
    pending_call_doc,
    question_doc,
    run_doc,
    tool_doc,
    tool_log_doc,
)
from agentworld.models import Chat, Message, Usage
from agentworld.models.domain import BranchOf
from agentworld.models.pending import PendingApproval, PendingClientCall, PendingQuestion
from agentworld.models.records import AuditEntry, ToolLogEntry
from agentworld.tools.registry import Tool


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


def test_a_chat_document_says_which_chat_and_message_a_branch_was_made_from() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    source = Chat(world="w", chat_id="chat_1", name="Plans", created_at=at, updated_at=at, message_count=4)
    branch = source.model_copy(
        update={
            "chat_id": "chat_2",
            "name": "Plans (branch)",
            "message_count": 3,
            "branch_of": BranchOf(chat_id="chat_1", message_id="msg_3"),
        }
    )

    assert json.dumps(chat_doc(source, Usage(input_tokens=5, output_tokens=2))) == (
        '{"world": "w", "chatId": "chat_1", "name": "Plans", "createdAt": "2026-01-02T03:04:05Z", '
        '"updatedAt": "2026-01-02T03:04:05Z", "messageCount": 4, "branchOf": null, '
        '"usage": {"inputTokens": 5, "outputTokens": 2}}'
    )
    assert json.dumps(chat_doc(branch)) == (
        '{"world": "w", "chatId": "chat_2", "name": "Plans (branch)", '
        '"createdAt": "2026-01-02T03:04:05Z", "updatedAt": "2026-01-02T03:04:05Z", '
        '"messageCount": 3, "branchOf": {"chatId": "chat_1", "messageId": "msg_3"}, '
        '"usage": {"inputTokens": 0, "outputTokens": 0}}'
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


WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def waiting(tool_call_id: str, tool_name: str, arguments: str) -> dict[str, Any]:
    """The fields every waiting call has, in chat_1 of agent a1."""
    return {
        "world": "w",
        "tool_call_id": tool_call_id,
        "chat_id": "chat_1",
        "agent": "a1",
        "tool_name": tool_name,
        "arguments": arguments,
        "batch_id": "msg_1",
        "trigger_sender": "human",
        "created_at": WHEN,
    }


def test_an_approval_document_names_the_approval_and_what_the_person_was_shown() -> None:
    pending = PendingApproval(
        **waiting("approval_1", "shell_cmd", '{"command": "rm x"}'),
        original_call_id="call_1",
        request_message_id="msg_2",
        message="Run rm x?",
        tool_args={"command": "rm x"},
        sandbox={
            "active": True,
            "writable": ["/work"],
            "network": "deny",
            "summary": "sandboxed: writes only in /work, no network",
        },
    )

    assert json.dumps(approval_doc(pending)) == (
        '{"approvalId": "approval_1", "agent": "a1", "chatId": "chat_1", "toolName": "shell_cmd", '
        '"toolArgs": {"command": "rm x"}, "message": "Run rm x?", "createdAt": "2026-01-02T03:04:05Z", '
        '"sandbox": {"active": true, "writable": ["/work"], "network": "deny"}, "diff": null}'
    )


def test_an_approval_stored_without_its_containment_shows_it_uncontained() -> None:
    """A request stored before containment was recorded fails closed: not sandboxed."""
    pending = PendingApproval(
        **waiting("approval_1", "shell_cmd", '{"command": "rm x"}'),
        original_call_id="call_1",
        request_message_id="msg_2",
        message="Run rm x?",
        tool_args={"command": "rm x"},
    )

    assert approval_doc(pending)["sandbox"] == {"active": False, "writable": [], "network": "allow"}
    assert "NOT sandboxed" in pending.sandbox.summary


def test_a_waiting_client_call_document_carries_its_arguments_decoded() -> None:
    call = PendingClientCall(**waiting("call_1", "client.pick", '{"color": "red"}'))

    assert json.dumps(pending_call_doc(call)) == (
        '{"toolCallId": "call_1", "agent": "a1", "chatId": "chat_1", "toolName": "client.pick", '
        '"toolArgs": {"color": "red"}, "createdAt": "2026-01-02T03:04:05Z"}'
    )


def test_a_question_document_names_the_question_its_options_and_whether_free_text_is_taken() -> None:
    asked = PendingQuestion(
        **waiting("call_1", "ask_user", '{"question": "Which environment?"}'),
        question="Which environment?",
        options=["staging", "production"],
        allow_free_text=False,
    )

    assert json.dumps(question_doc(asked)) == (
        '{"questionId": "call_1", "agent": "a1", "chatId": "chat_1", "question": "Which environment?", '
        '"options": ["staging", "production"], "allowFreeText": false, "createdAt": "2026-01-02T03:04:05Z"}'
    )


def test_a_run_document_lists_the_questions_still_waiting_after_the_approvals() -> None:
    class Outcome:
        chat_id = "chat_1"
        messages: list[Message] = []
        pending_approvals: list[PendingApproval] = []
        pending_questions = [
            PendingQuestion(**waiting("call_1", "ask_user", "{}"), question="Which tag?")
        ]

    doc = run_doc(Outcome())

    assert list(doc) == ["chatId", "messages", "pendingApprovals", "pendingQuestions"]
    assert doc["pendingQuestions"] == [question_doc(Outcome.pending_questions[0])]
    assert doc["pendingQuestions"][0]["options"] == [] and doc["pendingQuestions"][0]["allowFreeText"] is True


def test_a_grant_document_lists_its_root_commands_sorted() -> None:
    grant = Grant(
        grant_id="grant_1",
        world="w",
        scope="session",
        tool_name="shell_cmd",
        agent="a1",
        chat_id="chat_1",
        roots=frozenset({"ls", "git"}),
        approval_id="approval_1",
        created_at=WHEN,
        redirect_targets=frozenset({"out/log.txt", "notes.txt"}),
    )

    assert json.dumps(grant_doc(grant)) == (
        '{"grantId": "grant_1", "scope": "session", "toolName": "shell_cmd", "agent": "a1", '
        '"chatId": "chat_1", "rootCommands": ["git", "ls"], '
        '"redirectTargets": ["notes.txt", "out/log.txt"], "approvalId": "approval_1", '
        '"createdAt": "2026-01-02T03:04:05Z"}'
    )


def test_a_tool_document_shows_where_it_runs_and_its_approval_settings() -> None:
    tool = Tool(name="read_file", description="Read a file.", parameters={"type": "object"})

    assert json.dumps(tool_doc(tool)) == (
        '{"name": "read_file", "description": "Read a file.", "location": "server", '
        '"server": null, "approval": {"required": false, "scope": "once"}, "annotations": {}, '
        '"parameters": {"type": "object"}}'
    )


def test_an_approval_answer_reads_as_words_with_the_arguments_a_person_corrected_it_to() -> None:
    def said(answer: dict[str, Any]) -> str | None:
        return approval_answer("approval_1", json.dumps(answer))

    assert said({"decision": "approve", "scope": "once"}) == "approved once"
    assert said({"decision": "approve", "scope": "session", "arguments": {"command": "git stash"}}) == (
        'approved for this session, as corrected to {"command": "git stash"}'
    )
    assert said({"decision": "deny", "scope": "once"}) == "denied"
    assert approval_answer("call_1", json.dumps({"decision": "approve"})) is None
