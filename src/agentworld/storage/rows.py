"""Conversions between model objects and table rows, shared by the storage modules."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar

from agentworld.models import Agent, Message, World
from agentworld.models.text import storable
from agentworld.storage.connection import Row

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Record = TypeVar("_Record", bound="DataclassInstance")

_SETTINGS_KEPT = 256
"""Worlds and agents kept validated by their stored settings (``world_record``, ``row_agent``)."""


def ts(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def row_record(cls: type[_Record], row: Row, **converted: Any) -> _Record:
    """A record (a dataclass whose fields are columns of the same names) from its row: each
    field as stored, but those given in ``converted`` (a time to parse, a set to rebuild).
    So a mapper names only what it converts, and a field added to both is read at once."""
    stored = {name: getattr(row, name) for name in _fields(cls) if name not in converted}
    return cls(**stored, **converted)


@functools.cache
def _fields(cls: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(cls))


def message_row(world: str, owner: str | None, message: Message) -> dict[str, Any]:
    return {
        "world": world,
        "chat_id": message.chat_id,
        "memory_owner": owner,
        "message_id": message.message_id,
        "role": message.role,
        "sender": message.sender,
        "agent_id": message.agent_id,
        "content": storable(message.content),
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
        "model": message.model,
        "cost_usd": message.cost_usd,
    }


MESSAGE_COLUMNS: Final = (
    "message_id",
    "chat_id",
    "role",
    "sender",
    "agent_id",
    "content",
    "tool_calls",
    "tool_call_id",
    "reply_to",
    "created_at",
    "input_tokens",
    "output_tokens",
)
"""The ``messages`` columns ``row_message`` reads, in its order; a query may select more
columns after these. Statements leave ``tool_calls`` out of their JSON ``columns``: it is read
as the stored text and decoded by ``row_message`` only when there are calls (most messages
have none, and decoding would parse a "null" for each of them)."""

MESSAGE_COLUMNS_SQL: Final = ", ".join(f"messages.{name}" for name in (*MESSAGE_COLUMNS, "seq"))
"""``MESSAGE_COLUMNS`` and ``seq`` as SQL text."""

CHAT_MESSAGES: Final = (
    f"SELECT {MESSAGE_COLUMNS_SQL} FROM messages"
    " WHERE messages.world = :world_key AND messages.chat_id = :chat_key"
)
"""A chat's messages with their positions (``world_key``, ``chat_key``), as SQL text for a
query to go on with ``AND`` a condition on ``memory_owner`` (the transcript, or one agent's
memory) and its order."""

_validate_message = Message.__pydantic_validator__.validate_python


def row_message(row: Sequence[Any]) -> Message:
    """A message from a row that starts with ``MESSAGE_COLUMNS``.

    Rows are unpacked by position (attribute access on a row costs more),
    and the message is validated from one dict in pydantic-core, tool calls included, which
    is faster than building the models one by one or ``model_construct``.
    """
    (
        message_id,
        chat_id,
        role,
        sender,
        agent_id,
        content,
        tool_calls,
        tool_call_id,
        reply_to,
        created_at,
        input_tokens,
        output_tokens,
        *_,
    ) = row
    if isinstance(tool_calls, str):  # asyncpg hands JSON over already decoded
        # Most messages carry no calls: their JSON ``null`` needs no parser (a long memory
        # is read whole by a fresh process).
        tool_calls = None if tool_calls == "null" else json.loads(tool_calls)
    return _validate_message(
        {
            "message_id": message_id,
            "chat_id": chat_id,
            "role": role,
            "sender": sender,
            "agent_id": agent_id,
            "content": content,
            "tool_calls": tool_calls or None,
            "tool_call_id": tool_call_id,
            "reply_to_message_id": reply_to,
            # Parsed here, not by pydantic, so the time keeps the stdlib ``timezone.utc``.
            "created_at": datetime.fromisoformat(created_at),
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
        }
    )


def row_world(row: Row) -> World:
    return world_record(row.name, row.config, row.created_at, row.updated_at)


def world_record(
    name: str, config: dict[str, Any] | str, created_at: str, updated_at: str
) -> World:
    """A world from its stored columns (``config`` decoded, or its stored JSON text).

    From the text, a world read before with the same columns is the same object: every post
    of a turn reads its world, and validating the settings again cost as much as the read.
    Worlds are frozen, so the one object can be shared."""
    if isinstance(config, str):
        return _stored_world(name, config, created_at, updated_at)
    return World.model_validate(
        {**config, "name": name, "created_at": created_at, "updated_at": updated_at}
    )


@functools.lru_cache(maxsize=_SETTINGS_KEPT)
def _stored_world(name: str, config: str, created_at: str, updated_at: str) -> World:
    return world_record(name, json.loads(config), created_at, updated_at)


def row_agent(row: Row) -> Agent:
    """An agent from its row. From a row whose ``config`` is the stored text, the settings are
    validated once per text (``_stored_agent``); only the call count and the time of the last
    call, which change with every turn, are set per read."""
    config = row.config
    if isinstance(config, str):
        agent = _stored_agent(row.world, row.name, config, row.created_at)
        last_active = row.last_active
        return agent.model_copy(
            update={
                "llm_call_count": row.llm_call_count,
                "last_active": None if last_active is None else datetime.fromisoformat(last_active),
            }
        )
    return Agent.model_validate(
        {
            **config,
            "world": row.world,
            "name": row.name,
            "llm_call_count": row.llm_call_count,
            "last_active": row.last_active,
            "created_at": row.created_at,
        }
    )


@functools.lru_cache(maxsize=_SETTINGS_KEPT)
def _stored_agent(world: str, name: str, config: str, created_at: str) -> Agent:
    return Agent.model_validate(
        {**json.loads(config), "world": world, "name": name, "created_at": created_at}
    )


def agent_config(agent: Agent) -> dict[str, Any]:
    return agent.model_dump(
        mode="json", exclude={"world", "name", "llm_call_count", "last_active", "created_at"}
    )
