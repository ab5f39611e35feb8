"""Checks of world and agent settings made when they are written (create / update), so that
what would otherwise fail only at the next ``send`` — or never — is refused at once, with the
flag it concerns named: a working directory that is not one, policy files and MCP configs that
do not load, MCP commands that are missing, unknown tool names, client tools whose schema is
invalid, hooks that cannot be imported, provider settings that cannot work.

Heavy modules (the tools, the runtime's hook loader, jsonschema) are imported inside the
checks, so commands that write no settings never load them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from agentworld.errors import InvalidInputError
from agentworld.models import Agent, World
from agentworld.models.domain import base_url_problem
from agentworld.models.settings import MAX_ITERATIONS, MAX_OUTPUT_TOKENS, MAX_TURN_LIMIT
from agentworld.models.text import lone_surrogate_at

if TYPE_CHECKING:
    from agentworld.tools.registry import Tool

def check_world_settings(world: World, *, extra_tools: Sequence[Tool] = ()) -> None:
    """Refuse settings that would break the world later, not at its next message: counts out
    of bounds, a working directory that is not one, client tools that are malformed or shadow
    a built-in, policy files with any error (named by file and rule), MCP servers whose
    command is missing, legacy tool lists naming no tool, hooks that cannot be loaded.
    Each message starts with the setting it is about (``allowed_tools: …``)."""
    from agentworld.runtime.authorizer import check_policy_files
    from agentworld.runtime.policy_files import check_policy_rules
    from agentworld.tools.mcp_config import command_problem, parse_mcp_config
    from agentworld.tools.registry import ToolRegistry
    from agentworld.tools.world_tools import BUILTIN_TOOLS

    for setting, value, limit in (
        ("turn_limit", world.turn_limit, MAX_TURN_LIMIT),
        ("max_iterations", world.max_iterations, MAX_ITERATIONS),
    ):
        if value > limit:
            raise InvalidInputError(f"{setting} must be at most {limit}")
    if world.working_dir is not None:
        _check_directory(world.working_dir)
    registry = ToolRegistry([*BUILTIN_TOOLS, *extra_tools, *map(_client_tool, world.client_tools)])
    check_policy_files(world.policy_files)
    check_policy_rules(world.policy_rules)
    servers = parse_mcp_config(world.mcp_config) if world.mcp_config else []
    for server in servers:
        if (problem := command_problem(server)) is not None:
            raise InvalidInputError(problem)
    mcp_servers = {server.name for server in servers}
    for setting, names in (("allowed_tools", world.allowed_tools), ("excluded_tools", world.excluded_tools)):
        for name in names:
            prefix, separator, _tool = name.partition("__")
            if "*" in name or name in registry or (separator and prefix in mcp_servers):
                continue
            offered = ", ".join(tool.name for tool in registry)
            raise InvalidInputError(
                f"{setting}: {name!r} is not a tool of this world (its tools: {offered}; "
                "those of an MCP server are SERVER__TOOL or SERVER__*)"
            )
    for spec in world.hooks:
        _check_hook(spec)


def _check_directory(path: str) -> None:
    directory = Path(path)
    if not directory.exists():
        raise InvalidInputError(f"working_dir: {path} does not exist")
    if not directory.is_dir():
        raise InvalidInputError(f"working_dir: {path} is not a directory")


_CLIENT_TOOL_KEYS = frozenset({"name", "description", "parameters", "approval"})
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""What every provider accepts as a function name (OpenAI's rule is the strictest)."""


def _client_tool(definition: object) -> Tool:
    """A client tool declaration checked in full: a provider would refuse a bad name or a
    parameters object that is no JSON schema at every turn, and unknown keys are typos."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    from agentworld.tools.registry import CLIENT_PREFIX, client_tool

    if not isinstance(definition, dict):
        raise InvalidInputError("client_tools: each tool must be an object {name, description, parameters}")
    name = definition.get("name")
    if isinstance(name, str) and name.startswith(CLIENT_PREFIX):
        raise InvalidInputError(
            f"client_tools: tool name {name!r} uses the reserved prefix {CLIENT_PREFIX!r}"
        )
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise InvalidInputError(
            f"client_tools: tool name {name!r} must be 1-64 letters, digits, '_' or '-'"
        )
    if unknown := sorted(set(definition) - _CLIENT_TOOL_KEYS):
        raise InvalidInputError(f"client_tools: tool {name!r} has unknown keys: {', '.join(unknown)}")
    if not isinstance(definition.get("description", ""), str):
        raise InvalidInputError(f"client_tools: tool {name!r}: description must be text")
    parameters = definition.get("parameters", {"type": "object"})
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        raise InvalidInputError(
            f"client_tools: tool {name!r}: parameters must be a JSON schema of type 'object'"
        )
    try:
        Draft202012Validator.check_schema(parameters)
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.path)
        raise InvalidInputError(
            f"client_tools: tool {name!r}: parameters is not a valid JSON schema "
            f"({where + ': ' if where else ''}{exc.message})"
        ) from None
    approval = definition.get("approval") or {}
    if not (
        isinstance(approval, dict)
        and set(approval) <= {"required", "scope", "message"}
        and isinstance(approval.get("required", False), bool)
        and approval.get("scope", "once") in ("once", "session", "always")
        and isinstance(approval.get("message", ""), str | None)
    ):
        raise InvalidInputError(
            f"client_tools: tool {name!r}: approval must be an object "
            '{"required": true|false, "scope": "once"|"session"|"always", "message": TEXT}'
        )
    return client_tool(definition)


def _check_hook(spec: str) -> None:
    """Import the hook now: a module that fails to import (not only one that is missing)
    would otherwise fail every message of the world."""
    from agentworld.runtime.hooks import load_hook

    try:
        load_hook(spec)
    except InvalidInputError:
        raise
    except Exception as exc:
        raise InvalidInputError(
            f"hooks: cannot load hook {spec!r}: importing it raised {type(exc).__name__}: {exc}"
        ) from None


def check_agent_settings(agent: Agent, *, builtin_providers: bool) -> None:
    """Agent settings that would only fail at its first turn, each named by its setting.
    ``builtin_providers`` is False when an embedder's factory builds the providers."""
    if agent.base_url is not None and (problem := base_url_problem(agent.base_url)) is not None:
        from agentworld.redaction import redact_text  # a password in it is not echoed

        raise InvalidInputError(f"base_url: {redact_text(agent.base_url)!r} {problem}")
    if agent.max_tokens is not None and agent.max_tokens > MAX_OUTPUT_TOKENS:
        raise InvalidInputError(f"max_tokens must be at most {MAX_OUTPUT_TOKENS}")
    if not agent.model.strip():
        raise InvalidInputError("model: a model name is required (e.g. gpt-4o-mini; echo for scripted)")
    if agent.api_key_env is not None and not _is_variable_name(agent.api_key_env):
        # Never echoed: what was typed here may be the key itself, which must not reach the
        # database, the transcript or a log (SPEC §3: keys are never stored).
        raise InvalidInputError(
            "api_key_env: give the name of the environment variable that holds the key "
            "(letters, digits and '_', e.g. OPENAI_API_KEY), never the key itself"
        )
    if not builtin_providers:
        return
    if agent.provider == "openai-compatible" and agent.base_url is None:
        raise InvalidInputError(
            "base_url is required for provider 'openai-compatible': the server's URL, "
            "e.g. http://localhost:11434/v1"
        )
    if agent.provider == "scripted":
        from agentworld.providers.scripted import responder_for_model

        try:
            responder_for_model(agent.model)
        except InvalidInputError as exc:
            raise InvalidInputError(f"model: {exc}") from None


def _is_variable_name(name: str) -> bool:
    """A variable name, and not something shaped like a key (``ghp_…``, ``AKIA…``)."""
    from agentworld.redaction import redact_text

    return _VARIABLE_NAME.fullmatch(name) is not None and redact_text(name) == name


def invalid_input(exc: ValidationError) -> InvalidInputError:
    """One line naming each setting that is wrong (``turn_limit: …``); interfaces put their own
    names on the settings (the CLI says ``--turn-limit``)."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "value"
        message = error["msg"].removeprefix("Value error, ")
        # A rule of our own may already name its setting ("tool_env: 'X' is not …").
        parts.append(message if message.startswith(f"{where}: ") else f"{where}: {message}")
    return InvalidInputError("; ".join(parts))


def build_settings(model: type[World] | type[Agent], data: dict[str, Any]) -> Any:
    """The world or agent ``data`` describes, or one ``InvalidInputError`` naming what is wrong
    (a lone surrogate, which no text holds, included: see ``models.text``)."""
    for key, value in data.items():
        if (where := lone_surrogate_at(value)) is not None:
            at = f" at {where}" if where else ""
            raise InvalidInputError(f"{key}: holds a lone surrogate{at}, which is not text (undecodable bytes?)")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_input(exc) from None


def changed_fields(document: dict[str, Any], model: type[BaseModel], changes: Iterable[str]) -> dict[str, Any]:
    """The settings ``changes`` names (Python names), as ``document`` -- the world's or the
    agent's, as every interface shows it -- shows them: camelCase, and secrets masked. This is
    the ``data`` of the ``crud`` event announcing the change, which the event log keeps and
    every stream sends: the values given (an MCP server's token) must not reach it."""
    fields = model.model_fields
    aliases = [fields[name].alias or name for name in changes if name in fields]
    return {alias: document.get(alias) for alias in aliases}
