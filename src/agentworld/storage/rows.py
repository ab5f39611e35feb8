"""Conversions between model objects and table rows, shared by the storage modules."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from agentworld.models import Agent, Message, ToolCall, World


def ts(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def message_row(world: str, owner: str | None, message: Message) -> dict[str, Any]:
    return {
        "world": world,
        "chat_id": message.chat_id,
        "memory_owner": owner,
        "message_id": message.message_id,
        "role": message.role,
        "sender": message.sender,
        "agent_id": message.agent_id,
        "content": message.content,
        "tool_calls": (
            [call.model_dump(mode="json") for call in message.tool_calls]
            if message.tool_calls
            else None
        ),
        "tool_call_id": message.tool_call_id,
        "reply_to": message.reply_to_message_id,
        "created_at": message.created_at.isoformat(),
        "input_tokens": message.input_tokens,
        "output_tokens": message.output_tokens,
    }


def row_message(row: sa.Row[Any]) -> Message:
    return Message(
        message_id=row.message_id,
        chat_id=row.chat_id,
        role=row.role,
        sender=row.sender,
        agent_id=row.agent_id,
        content=row.content,
        tool_calls=[ToolCall.model_validate(c) for c in row.tool_calls] if row.tool_calls else None,
        tool_call_id=row.tool_call_id,
        reply_to_message_id=row.reply_to,
        created_at=datetime.fromisoformat(row.created_at),
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
    )


def row_world(row: sa.Row[Any]) -> World:
    return World.model_validate(
        {**row.config, "name": row.name, "created_at": row.created_at, "updated_at": row.updated_at}
    )


def row_agent(row: sa.Row[Any]) -> Agent:
    return Agent.model_validate(
        {
            **row.config,
            "world": row.world,
            "name": row.name,
            "llm_call_count": row.llm_call_count,
            "last_active": row.last_active,
            "created_at": row.created_at,
        }
    )


def agent_config(agent: Agent) -> dict[str, Any]:
    return agent.model_dump(
        mode="json", exclude={"world", "name", "llm_call_count", "last_active", "created_at"}
    )
