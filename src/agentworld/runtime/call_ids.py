"""Tool-call ids the model repeats are replaced before the calls are stored.

Every result, approval and recovery step finds its call by id: a waiting call
or approval is keyed on it (one per world), a result answers the call with its
id, a resumed loop checks which ids of a batch still lack a result. A model may
repeat an id — twice in one response, an id from an earlier turn, or an
approval id — and storing it again would either fail on the key or pair a
result with the wrong call. So each repeated id is renamed, once, before the
assistant message is stored; from then on the renamed id is the call's only id
(in memory, in the model's next input, in events and logs), and nothing of the
turn is lost.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from agentworld.approval.grants import PolicyState
from agentworld.models import Message, ToolCall

if TYPE_CHECKING:
    from agentworld.storage.sql import SQLStorage

logger = logging.getLogger("agentworld.runtime")

MAX_ID = 128
"""The width of the stored ``tool_call_id`` columns."""
_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def fresh_id(original: str, taken: set[str]) -> str:
    """An id not in ``taken`` that keeps ``original``'s prefix (Gemini marks its synthetic ids
    by one) and the characters every provider accepts in an id."""
    base = _ID_CHARS.sub("_", original)[: MAX_ID - 18] or "call"
    while True:
        candidate = f"{base}-{secrets.token_hex(8)}"
        if candidate not in taken:
            return candidate


def unique_call_ids(calls: Sequence[ToolCall], taken: Iterable[str]) -> list[ToolCall]:
    """``calls`` with every id that is empty, too long, in ``taken`` or repeated in the batch
    replaced by a fresh one (the first use of an id in the batch keeps it)."""
    used = set(taken)
    unique: list[ToolCall] = []
    for call in calls:
        if call.id and len(call.id) <= MAX_ID and call.id not in used:
            used.add(call.id)
            unique.append(call)
            continue
        renamed = fresh_id(call.id, used)
        used.add(renamed)
        logger.warning("tool call id %r is already used; stored as %r", call.id, renamed)
        unique.append(call.model_copy(update={"id": renamed}))
    return unique


async def with_unique_call_ids(
    storage: SQLStorage, world: str, memory: Sequence[Message], calls: list[ToolCall]
) -> tuple[list[ToolCall], PolicyState]:
    """The batch's calls with ids that no call of the agent's memory, and no waiting call,
    approval, result or tool log of the world, already has; and, from the same read, the
    world's settings and grants that authorize the batch (``ToolContext.policy``)."""
    taken = {call.id for m in memory for call in m.tool_calls or ()}
    taken |= {m.tool_call_id for m in memory if m.tool_call_id}
    used, policy = await storage.approvals.before_tool_calls(
        world, {call.id for call in calls} - taken
    )
    return unique_call_ids(calls, taken | used), policy
