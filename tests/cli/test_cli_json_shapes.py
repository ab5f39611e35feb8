"""Snapshots of the JSON documents the CLI prints (SPEC §3 — a contract checked from outside).

Each document is reduced to its shape: the exact keys, and for every value its type, with ids
reduced to their kind (``<chat id>``) and timestamps to ``<timestamp>`` after checking that they
parse as ISO 8601 with a time zone. A key added, dropped or renamed, or a value changing type,
fails here. Real ``agentworld`` processes, a real SQLite file and the scripted loopback model.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agentworld.testing.openai_wire import Reply, ToolCallSpec

pytestmark = pytest.mark.both_engines_wide  # on Temporal too in the wide run (tests/conftest.py)

TIMESTAMP = "<timestamp>"
ID = re.compile(r"(chat|msg|approval|call|grant)_[0-9A-Za-z]+")
TIMESTAMP_KEYS = {"createdAt", "updatedAt", "lastActive"}
ID_KEYS = {
    "chatId", "currentChatId", "messageId", "replyToMessageId", "approvalId", "questionId", "id", "tool_call_id"
}


def shape(value: Any, key: str = "") -> Any:
    """The value with every leaf replaced by its type, id kind or ``<timestamp>``."""
    if isinstance(value, dict):
        return {k: shape(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(item, key) for item in value]
    if value is None:
        return None
    if isinstance(value, str) and key in TIMESTAMP_KEYS:
        parsed = datetime.fromisoformat(value)
        assert parsed.tzinfo is not None, f"{key}={value!r} has no time zone"
        assert value.endswith("Z"), f"{key}={value!r}: every timestamp is UTC written with Z"
        return TIMESTAMP
    if isinstance(value, str) and key in ID_KEYS:
        found = ID.fullmatch(value)
        assert found is not None, f"{key}={value!r} is not an id"
        return f"<{found[1]} id>"
    return type(value)


# -- expected shapes ------------------------------------------------------------------

WORLD: dict[str, Any] = {
    "name": str,
    "description": str,
    "turnLimit": int,
    "maxIterations": int,
    "approvalTimeout": float,
    "streaming": bool,
    "nonInteractive": bool,
    "mainAgent": None,
    "currentChatId": "<chat id>",
    "workingDir": str,
    "workerQueue": None,
    "policyFiles": [],
    "policyRules": [],
    "policyMode": str,
    "allowedTools": [],
    "excludedTools": [],
    "mcpConfig": None,
    "hooks": [],
    "clientTools": [],
    "toolEnv": [],
    "sandbox": str,
    "network": str,
    "budget": None,
    "createdAt": TIMESTAMP,
    "updatedAt": TIMESTAMP,
}

AGENT: dict[str, Any] = {
    "world": str,
    "name": str,
    "provider": str,
    "model": str,
    "systemPrompt": str,
    "temperature": float,
    "maxTokens": int,
    "baseUrl": str,
    "apiKeyEnv": str,
    "memoryWindow": int,
    "modelDeadlineSeconds": int,
    "priceIn": None,
    "priceOut": None,
    "budget": None,
    "status": str,
    "llmCallCount": int,
    "lastActive": TIMESTAMP,
    "createdAt": TIMESTAMP,
}

CHAT: dict[str, Any] = {
    "world": str,
    "chatId": "<chat id>",
    "name": str,
    "createdAt": TIMESTAMP,
    "updatedAt": TIMESTAMP,
    "messageCount": int,
    "branchOf": None,
}
BRANCH_OF: dict[str, Any] = {"chatId": "<chat id>", "messageId": "<msg id>"}

USAGE: dict[str, Any] = {"inputTokens": int, "outputTokens": int, "costUsd": None, "unpricedCalls": int}
"""A chat's usage with calls to model ``m``, which has no price: its cost is unknown."""
UNUSED: dict[str, Any] = {**USAGE, "costUsd": float}
"""A chat's usage before any call: nothing spent."""
USAGE_TOTAL: dict[str, Any] = {
    "calls": int, "inputTokens": int, "outputTokens": int, "costUsd": None, "unpricedCalls": int,
}  # fmt: skip


def message(**fields: Any) -> dict[str, Any]:
    """A message document (SPEC §3: every key present, absent values null)."""
    return {
        "messageId": "<msg id>",
        "chatId": "<chat id>",
        "role": str,
        "sender": str,
        "agentId": None,
        "content": None,
        "tool_calls": None,
        "tool_call_id": None,
        "replyToMessageId": None,
        "createdAt": TIMESTAMP,
        **fields,
    }


def tool_call(kind: str) -> dict[str, Any]:
    return {"id": f"<{kind} id>", "type": str, "function": {"name": str, "arguments": str}}


HUMAN = message(content=str)
CALLS_SHELL = message(agentId=str, tool_calls=[tool_call("call")], replyToMessageId="<msg id>")
ASKS_APPROVAL = message(agentId=str, tool_calls=[tool_call("approval")], replyToMessageId="<msg id>")
DECISION = message(agentId=str, content=str, tool_call_id="<approval id>", replyToMessageId="<msg id>")
RESULT = message(agentId=str, content=str, tool_call_id="<call id>", replyToMessageId="<msg id>")
ANSWER = message(agentId=str, content=str, replyToMessageId="<msg id>")

APPROVAL: dict[str, Any] = {
    "approvalId": "<approval id>",
    "agent": str,
    "chatId": "<chat id>",
    "toolName": str,
    "toolArgs": {"command": str},
    "message": str,
    "createdAt": TIMESTAMP,
    "sandbox": {"active": bool, "writable": [str], "network": str},
    "diff": None,
}

QUESTION: dict[str, Any] = {
    "questionId": "<call id>",
    "agent": str,
    "chatId": "<chat id>",
    "question": str,
    "options": [str, str],
    "allowFreeText": bool,
    "createdAt": TIMESTAMP,
}

RULE: dict[str, Any] = {
    "name": str,
    "decision": str,
    "priority": float,
    "toolName": str,
    "argsPattern": None,
    "commandPrefix": None,
    "commandRegex": None,
    "pathPrefix": None,
    "modes": None,
    "allowRedirection": bool,
    "denyMessage": None,
    "source": str,
    "index": int,
    "number": int,
}


# -- the documents ----------------------------------------------------------------------


def test_world_agent_chat_and_conversation_documents_keep_their_shape(
    cli: Any, script: Any, server: Any, tmp_path: Path
) -> None:
    """One world through its life: every document is taken from it (each command is a process)."""

    def a1(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("done")
        return Reply.tools(ToolCallSpec(name="shell_cmd", arguments=json.dumps({"command": "touch X"})))

    script.by_agent["a1"] = a1
    key = {"A1_KEY": "test-key"}
    cli("world", "create", "w1", "--working-dir", str(tmp_path))
    cli(
        "agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1",
        "--temperature", "0.5", "--max-tokens", "100", "--api-key-env", "A1_KEY",
    )

    chat = cli("chat", "new", "w1", "--json").json()
    unused = cli("chat", "list", "w1", "--json").json()

    assert shape(chat) == {"chatId": "<chat id>"}
    # Every chat has its usage, zero until an agent answers.
    assert shape(unused) == {"chats": [{**CHAT, "usage": UNUSED, "current": bool}]}
    assert unused["chats"][0]["usage"] == {
        "inputTokens": 0, "outputTokens": 0, "costUsd": 0.0, "unpricedCalls": 0,
    }  # fmt: skip
    assert unused["chats"][0]["current"] is True  # `chat new` made it the current chat

    sent = cli("send", "w1", "@a1 please", "--chat", chat["chatId"], "--json", env=key).json()

    assert shape(sent) == {
        "chatId": "<chat id>",
        "messages": [HUMAN, CALLS_SHELL, ASKS_APPROVAL],
        "pendingApprovals": [APPROVAL],
        "pendingQuestions": [],
    }
    assert sent["chatId"] == chat["chatId"]
    (approval,) = sent["pendingApprovals"]
    assert approval["toolArgs"] == {"command": "touch X"}

    transcript = cli("messages", "w1", "--json").json()
    pending = cli("approvals", "w1", "--json").json()

    assert shape(transcript) == {
        "chatId": "<chat id>",
        "agent": None,
        "messages": [HUMAN, CALLS_SHELL, ASKS_APPROVAL],
    }
    assert transcript["messages"] == sent["messages"]
    assert pending == {"approvals": [approval]}

    done = cli(
        "approve", "w1", approval["approvalId"], "--decision", "approve", "--json", env=key
    ).json()

    assert shape(done) == {
        "chatId": "<chat id>",
        "messages": [DECISION, RESULT, ANSWER],
        "pendingApprovals": [],
        "pendingQuestions": [],
    }
    assert done["chatId"] == chat["chatId"]
    assert (tmp_path / "X").exists()

    chats = cli("chat", "list", "w1", "--json").json()
    worlds = cli("world", "list", "--json").json()
    world = cli("world", "show", "w1", "--json").json()
    agents = cli("agent", "list", "w1", "--json").json()

    assert shape(chats) == {"chats": [{**CHAT, "usage": USAGE, "current": bool}]}
    assert chats["chats"][0]["chatId"] == chat["chatId"]
    assert shape(worlds) == {"worlds": [WORLD]}
    assert shape(world) == WORLD
    assert worlds["worlds"] == [world]
    assert world["currentChatId"] == chat["chatId"]
    assert shape(agents) == {"agents": [AGENT]}
    usage = cli("usage", "w1", "--json").json()
    assert shape(usage) == {
        "world": str,
        "chatId": None,
        "pricesAsOf": str,
        "total": USAGE_TOTAL,
        "byAgent": [{"agent": str, **USAGE_TOTAL}],
        "byChat": [{"chatId": "<chat id>", **USAGE_TOTAL}],
        "byModel": [{"model": str, **USAGE_TOTAL}],
    }

    branched = cli("chat", "branch", "w1", done["messages"][0]["messageId"], "--json").json()
    with_branch = cli("chat", "list", "w1", "--json").json()

    assert shape(branched) == {"chatId": "<chat id>"}
    assert shape(with_branch) == {
        "chats": [
            {**CHAT, "usage": USAGE, "current": bool},
            {**CHAT, "branchOf": BRANCH_OF, "usage": UNUSED, "current": bool},
        ]
    }
    # As the text marks it: the branch is now the current chat, its source is not.
    assert [c["current"] for c in with_branch["chats"]] == [False, True]
    assert with_branch["chats"][1]["branchOf"] == {
        "chatId": chat["chatId"], "messageId": done["messages"][0]["messageId"]
    }


def test_question_documents_keep_their_shape(cli: Any, script: Any, server: Any) -> None:
    which = {"question": "Which environment?", "options": ["staging", "production"], "allowFreeText": False}

    def a1(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply.text("done")
        return Reply.tools(ToolCallSpec(name="ask_user", arguments=json.dumps(which)))

    script.by_agent["a1"] = a1
    cli("world", "create", "w1")
    cli("agent", "create", "w1", "a1", "--provider", "openai", "--model", "m",
        "--base-url", server.base_url, "--system-prompt", "agent:a1")

    sent = cli("send", "w1", "@a1 deploy", "--json").json()
    listed = cli("questions", "w1", "--json").json()
    (question,) = listed["questions"]
    answered = cli("answer", "w1", question["questionId"], "staging", "--json").json()

    assert shape(sent) == {
        "chatId": "<chat id>",
        "messages": [HUMAN, message(agentId=str, tool_calls=[tool_call("call")], replyToMessageId="<msg id>")],
        "pendingApprovals": [],
        "pendingQuestions": [QUESTION],
    }
    assert shape(listed) == {"questions": [QUESTION]}
    assert sent["pendingQuestions"] == listed["questions"]
    assert shape(answered) == {
        "chatId": "<chat id>",
        "messages": [RESULT, ANSWER],
        "pendingApprovals": [],
        "pendingQuestions": [],
    }


def test_policy_test_documents_keep_their_shape(cli: Any) -> None:
    decided = cli("policy", "test", "--tool", "read_file", "--args", '{"path": "x"}', "--json").json()
    no_rule = cli("policy", "test", "--tool", "some_server_tool", "--args", "{}", "--json").json()
    overridden = cli(
        "policy", "test", "--tool", "shell_cmd", "--args", '{"command": "ls"}',
        "--non-interactive", "--json",
    ).json()

    assert shape(decided) == {"decision": str, "rule": RULE, "reason": str}
    assert decided["decision"] == "ALLOW"
    assert shape(no_rule) == {"decision": str, "rule": None, "reason": str}
    assert no_rule["decision"] == "ASK_USER"
    # "by" appears when something other than the policy settled the call.
    assert shape(overridden) == {"decision": str, "rule": RULE, "reason": str, "by": str}
    assert overridden["decision"] == "DENY"
    assert {d["decision"] for d in (decided, no_rule, overridden)} <= {"ALLOW", "DENY", "ASK_USER"}
