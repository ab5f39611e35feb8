"""The masks the API shows in place of secrets, and what a mask sent back means.

A world's ``mcpConfig`` is shown with its secrets masked (``"[REDACTED:token]"``), as the logs
mask them, and so is a password in an agent's ``baseUrl``. A client that edits a world the natural way — read it, change a field, send the
settings back — sends those masks back too; stored as they are, they would replace the real
token with the text of its mask. So a value sent back exactly as the API shows it at that
place keeps the secret stored there; a mask anywhere else (nothing stored there, or the text
around it changed) is refused, since it cannot stand for any value.
"""

from __future__ import annotations

import re
from typing import Any

from agentworld.documents import shown_base_url
from agentworld.documents import shown_mcp_config as shown_mcp_config
from agentworld.server.errors import ApiError

_MASK = re.compile(r"\[REDACTED(?::[^\]\s]*)?\]")
"""A mask as ``agentworld.redaction`` writes it (``[REDACTED:kind]``, or the kind-less ``[REDACTED]`` of older records)."""


def keep_masked_secrets(given: dict[str, Any], stored: dict[str, Any] | None) -> dict[str, Any]:
    """``given`` (an ``mcpConfig`` sent to the API) with each value that is exactly the mask
    shown for the ``stored`` value at the same place replaced by that stored value; a mask
    anywhere else is refused (422), naming where."""
    shown = shown_mcp_config(stored) if stored is not None else None
    kept: dict[str, Any] = _kept(given, stored, shown, "mcpConfig")
    return kept


def keep_masked_base_url(given: str, stored: str | None) -> str:
    """``given`` (an agent's ``baseUrl`` sent to the API), or the ``stored`` URL when
    ``given`` is exactly how the API shows it (its password masked); a mask otherwise is
    refused (422)."""
    shown = shown_base_url(stored) if stored is not None else None
    kept: str = _kept(given, stored, shown, "baseUrl")
    return kept


def _kept(given: Any, stored: Any, shown: Any, where: str) -> Any:
    if isinstance(given, dict):
        return {
            key: _kept(value, _at(stored, key), _at(shown, key), f"{where}.{key}")
            for key, value in given.items()
        }
    if isinstance(given, list):
        return [
            _kept(value, _at(stored, index), _at(shown, index), f"{where}[{index}]")
            for index, value in enumerate(given)
        ]
    if isinstance(given, str) and _MASK.search(given):
        if given == shown and shown != stored:
            return stored
        raise ApiError(
            422, "validation_error",
            f"{where}: {given!r} holds a mask the API shows in place of a secret, but it is "
            "not what is shown for a secret stored there, so it stands for no value: send the "
            "value itself (a value sent back exactly as shown keeps the stored secret)",
        )
    return given


def _at(container: Any, key: str | int) -> Any:
    """What ``container`` holds at ``key``, or None when it holds nothing there."""
    if isinstance(container, dict) and isinstance(key, str):
        return container.get(key)
    if isinstance(container, list) and isinstance(key, int) and key < len(container):
        return container[key]
    return None
