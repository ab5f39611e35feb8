"""Running one server tool and shaping its outcome for the model (SPEC O2).

Whatever happens — a return value, an exception, a timeout — the model gets a
``ToolResult`` whose content is a JSON document; nothing raises past here.

Every result the model, the transcript and the logs ever see is a ``ToolResult``
— a built-in's, an MCP server's, a client's (``runtime/client_calls.py``), an
error's — so that is where the values of this process's secret variables are
masked, once for every tool: a file the agent reads (a ``.env`` holding the
running key) shows ``[REDACTED:OPENAI_API_KEY]`` exactly as ``cat`` through
``shell_cmd`` does. The variables the agents read their keys from count as secret whatever
their names (``process_secrets.key_variables``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentworld.approval.decisions import DenialSource
from agentworld.models.records import INTERRUPTED
from agentworld.process_secrets import key_variables
from agentworld.tools.environment import redact_secrets, secret_values, with_json_forms
from agentworld.tools.registry import Tool, ToolContext


@dataclass(frozen=True, slots=True)
class ToolResult:
    tool_call_id: str
    content: str
    """The text the model sees: a JSON document."""
    is_error: bool = False
    denied_by: DenialSource | None = None
    """Set when the call was refused before it ran, and by whom (an error result too)."""

    def __post_init__(self) -> None:
        # Masked however the result was built: no tool, and no caller that builds a result
        # itself, can hand a secret value of this process to the model or the logs.
        object.__setattr__(self, "content", mask_process_secrets(self.content))

    @classmethod
    def error(cls, tool_call_id: str, message: object) -> ToolResult:
        """A failed call's result: ``{"error": message}``, where the message is text or, as a
        client tool may report its failure, any JSON value (kept as JSON, never its repr)."""
        return cls(tool_call_id, json.dumps({"error": message}, default=str), is_error=True)

    @classmethod
    def denial(cls, tool_call_id: str, reason: str, *, by: DenialSource) -> ToolResult:
        return cls(tool_call_id, json.dumps({"error": reason}), is_error=True, denied_by=by)

    @classmethod
    def interrupted(cls, tool_call_id: str) -> ToolResult:
        return cls.error(tool_call_id, INTERRUPTED)

    @classmethod
    def ok(cls, tool_call_id: str, value: Any) -> ToolResult:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return cls(tool_call_id, text)


def mask_process_secrets(text: str, *, environ: Mapping[str, str] | None = None) -> str:
    """``text`` (a result: plain text or a JSON document) with the value of each secret-named
    variable of ``environ`` (default: this process's), and of each variable an agent reads its
    key from, shown as ``[REDACTED:<NAME>]``, as it is or as a JSON string writes it."""
    secrets = secret_values(os.environ if environ is None else environ, names=key_variables())
    return redact_secrets(text, with_json_forms(secrets)) if secrets else text


async def run_tool(tool: Tool, tool_call_id: str, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    if tool.run is None:
        return ToolResult.error(tool_call_id, f"tool {tool.name!r} cannot run on the server")
    try:
        value = await tool.run(arguments, context)
    except Exception as exc:  # a tool must never crash the loop (SPEC O2)
        reason = str(exc) or type(exc).__name__
        return ToolResult.error(tool_call_id, f"{tool.name} failed: {reason}")
    return ToolResult.ok(tool_call_id, value)
