"""The ``mcpServers`` configuration of a world (SPEC T3), checked strictly — pure, no SDK.

Kept apart from the client code so that a world's settings can be validated when they
are set (``world create --mcp-config``) without importing the ``mcp`` SDK. Parsing is pure;
``command_problem`` alone looks at the file system, for a command that is not there.

Besides the usual keys, an entry may say ``"trust": true``: the world's owner vouches for
that server, so its tools run without asking unless a policy rule says otherwise (like
Gemini CLI's ``trust``). Without it, a server's tool asks first unless its annotations say
it only reads (``runtime/authorizer.py``, ``tool_default_rule``). A stdio entry may say
``"sandbox": false``: that server runs outside the world's sandbox (SPEC C2), and every
approval of its tools says so.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentworld.errors import InvalidInputError

MCPTransport = Literal["stdio", "streamable-http"]
SEPARATOR = "__"
"""Joins server and tool names: ``github__create_issue``."""
_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class MCPServerConfig:
    """One entry of ``mcpServers``: a command to run (stdio) or a URL (streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    transport: MCPTransport = "stdio"
    trust: bool = False
    """The owner's explicit choice to let this server's tools run without asking by default."""
    sandbox: bool = True
    """A stdio server runs in the world's sandbox (SPEC C2) unless its entry says
    ``"sandbox": false``."""


class _StdioEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    command: str = Field(min_length=1)
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    transport: Literal["stdio"] = "stdio"
    type: Literal["stdio"] = "stdio"
    trust: bool = False
    sandbox: bool = True


class _HttpEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = {}
    transport: Literal["streamable-http", "http"] = "streamable-http"
    type: Literal["streamable-http", "http"] = "streamable-http"
    trust: bool = False


def parse_mcp_config(document: Mapping[str, Any]) -> list[MCPServerConfig]:
    """The servers of a ``{"mcpServers": {name: {...}}}`` document; any doubt is an error."""
    if not isinstance(document, Mapping) or set(document) - {"mcpServers"}:
        raise InvalidInputError("the MCP config must be an object with only an 'mcpServers' key")
    servers = document.get("mcpServers", {})
    if not isinstance(servers, Mapping):
        raise InvalidInputError("MCP config: 'mcpServers' must map server names to objects")
    return [_parse_server(check_server_name(name), entry) for name, entry in servers.items()]


def command_problem(server: MCPServerConfig) -> str | None:
    """Why a stdio server's command cannot be started from here, or None when it can (or the
    server is reached by URL). Looked up as the SDK will: on the ``PATH`` of the server's
    environment, a path with a slash from the server's ``cwd``."""
    command = server.command
    if command is None:
        return None
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        path = Path(server.cwd or ".").expanduser() / Path(command).expanduser()
        if not path.is_file():
            return f"MCP server {server.name!r}: command {command!r} does not exist"
        if not os.access(path, os.X_OK):
            return f"MCP server {server.name!r}: command {command!r} is not executable"
        return None
    if shutil.which(command, path=server.env.get("PATH", os.environ.get("PATH"))) is None:
        return f"MCP server {server.name!r}: command {command!r} was not found on PATH"
    return None


def check_server_name(name: object) -> str:
    """A name that keeps ``server__tool`` unambiguous: the first ``__`` ends the server name."""
    if not isinstance(name, str) or not _SERVER_NAME.fullmatch(name):
        raise InvalidInputError(f"MCP server {name!r}: use only letters, digits, _ and - in names")
    if SEPARATOR in name or name.endswith("_"):
        raise InvalidInputError(
            f"MCP server {name!r}: a name may not contain '__' or end with '_' "
            "(tools are named server__tool)"
        )
    return name


def _parse_server(name: str, entry: object) -> MCPServerConfig:
    def problem(text: str) -> InvalidInputError:
        return InvalidInputError(f"MCP server {name!r}: {text}")

    if not isinstance(entry, Mapping) or ("command" in entry) == ("url" in entry):
        raise problem("expected an object with either 'command' (stdio) or 'url' (streamable HTTP)")
    if "sse" in (entry.get("transport"), entry.get("type")):
        raise problem("the 'sse' transport is not supported; use streamable HTTP")
    try:
        if "url" in entry:
            http = _HttpEntry.model_validate(entry)
            return MCPServerConfig(
                name,
                url=http.url,
                headers=http.headers,
                transport="streamable-http",
                trust=http.trust,
            )
        stdio = _StdioEntry.model_validate(entry)
    except ValidationError as invalid:
        reasons = []
        for error in invalid.errors():
            where = ".".join(str(part) for part in error["loc"])
            unknown = error["type"] == "extra_forbidden"
            reasons.append(f"unknown key {where!r}" if unknown else f"{where}: {error['msg']}")
        raise problem("; ".join(reasons)) from None
    return MCPServerConfig(
        name,
        command=stdio.command,
        args=tuple(stdio.args),
        env=stdio.env,
        cwd=stdio.cwd,
        trust=stdio.trust,
        sandbox=stdio.sandbox,
    )
