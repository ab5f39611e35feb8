"""The world file (SPEC §7.4 D1): one TOML file holding a world's settings and its agents,
read by ``agentworld apply`` and written by ``agentworld export``.

Keys are the camelCase names of the world and agent documents. A key left out means the
default, so a file describes the whole world; ``export`` leaves defaults out, so export,
apply, export gives the same bytes. Secrets never belong in the file: a value shaped like a
key is refused, and agents name the variable that holds theirs (``apiKeyEnv``).
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.errors import InvalidInputError

WORLD_KEYS: dict[str, str] = {
    "name": "name",
    "description": "description",
    "turnLimit": "turn_limit",
    "maxIterations": "max_iterations",
    "approvalTimeout": "approval_timeout",
    "streaming": "streaming",
    "nonInteractive": "non_interactive",
    "mainAgent": "main_agent",
    "workingDir": "working_dir",
    "policyFiles": "policy_files",
    "policyMode": "policy_mode",
    "allowedTools": "allowed_tools",
    "excludedTools": "excluded_tools",
    "hooks": "hooks",
    "toolEnv": "tool_env",
    "sandbox": "sandbox",
    "network": "network",
    "clientTools": "client_tools",
    "budget": "budget",
}
"""The keys of ``[world]``, in the order ``export`` writes them, and the setting each is."""

AGENT_KEYS: dict[str, str] = {
    "name": "name",
    "provider": "provider",
    "model": "model",
    "baseUrl": "base_url",
    "apiKeyEnv": "api_key_env",
    "temperature": "temperature",
    "maxTokens": "max_tokens",
    "memoryWindow": "memory_window",
    "modelDeadlineSeconds": "model_deadline_seconds",
    "priceIn": "price_in",
    "priceOut": "price_out",
    "budget": "budget",
    "systemPrompt": "system_prompt",
}
"""The keys of an ``[[agents]]`` entry (besides ``promptFile``), in the order written."""

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class WorldFile:
    """What a world file describes: the world's settings (setting names, defaults left out)
    and each agent's settings, in the file's order."""

    name: str
    world: dict[str, Any]
    agents: list[dict[str, Any]] = field(default_factory=list)
    path: Path = Path("world.toml")
    text: str = ""

    def settings_error(self, where: str, exc: Exception) -> InvalidInputError:
        """A settings check's error (worded for the command line: ``--turn-limit: …``) as one
        about this file's key: ``FILE:LINE: world.turnLimit: …``."""
        message = str(exc)
        flag = re.match(r"(?:--)?([a-z][a-z_-]*)(?::\s*|\s+(?=must))", message)
        if flag is None:
            return InvalidInputError(f"{self.path}: {where}: {message}")
        head, *rest = re.split(r"[-_]", flag.group(1))
        key = head + "".join(part.title() for part in rest)
        return file_error(self.path, self.text, where, key, message[flag.end():])


def file_error(path: Path, text: str, where: str, key: str, problem: str) -> InvalidInputError:
    """An error naming the file, the line of ``key`` in table ``where`` (when found), the key
    path and the problem."""
    line = _line_of(text, where, key)
    at = f"{path}:{line}" if line else str(path)
    return InvalidInputError(f"{at}: {where}.{key}: {problem}" if key else f"{at}: {where}: {problem}")


def _line_of(text: str, where: str, key: str) -> int | None:
    """The line of ``key =`` inside table ``where`` (``world``, ``agents[2]``, ``mcp.servers.x``)."""
    table, _, index = where.partition("[")
    wanted = int(index.rstrip("]")) if index else 0
    seen = -1
    inside = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("["):
            header = line.strip("[] ")
            if header == table:
                seen += 1
                inside = seen == wanted
            else:
                inside = False
            if inside and not key:
                return number
            continue
        if inside and key and re.match(rf"\"?{re.escape(key)}\"?\s*=", line):
            return number
    return None


def read_world_file(path: Path) -> WorldFile:
    """Read and check the shape of a world file: known keys only, no secret values, prompts
    from ``promptFile`` and relative paths resolved against the file's directory. The
    settings themselves are checked as ``world create``/``agent create`` check them, by the
    caller."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_world_text(text, path, path.parent.absolute())


def parse_world_text(text: str, path: Path, base: Path | None) -> WorldFile:
    """Check the shape of a world file's ``text`` (``path`` names it in errors). ``base`` is the
    directory relative paths resolve against; None when the file has no location (it came
    over HTTP): then ``promptFile`` and relative paths are refused rather than read from
    wherever the server happens to run."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
    for top in data:
        if top not in ("world", "agents", "mcp"):
            raise file_error(path, text, top, "", "unknown table (use world, agents, mcp)")
    world_table = data.get("world")
    if not isinstance(world_table, dict) or "name" not in world_table:
        raise InvalidInputError(f"{path}: a [world] table with a name is required")
    world: dict[str, Any] = {}
    for key, value in world_table.items():
        if key not in WORLD_KEYS:
            raise file_error(path, text, "world", key, f"unknown key (known: {', '.join(WORLD_KEYS)})")
        _refuse_secrets(path, text, "world", key, value)
        setting = WORLD_KEYS[key]
        if setting == "working_dir" and isinstance(value, str):
            value = _resolve(path, text, "world", key, base, value)
        if setting == "policy_files" and isinstance(value, list):
            value = [_resolve(path, text, "world", key, base, v) if isinstance(v, str) else v for v in value]
        world[setting] = value
    if base is not None:
        world.setdefault("working_dir", str(base))
    servers = (data.get("mcp") or {}).get("servers") if isinstance(data.get("mcp"), dict) else None
    if "mcp" in data:
        if not isinstance(servers, dict) or set(data["mcp"]) != {"servers"}:
            raise file_error(path, text, "mcp", "", "holds only [mcp.servers.NAME] tables")
        for name, server in servers.items():
            _refuse_secrets(path, text, f"mcp.servers.{name}", "", server)
        world["mcp_config"] = {"mcpServers": servers}
    agents: list[dict[str, Any]] = []
    entries = data.get("agents", [])
    if not isinstance(entries, list):
        raise file_error(path, text, "agents", "", "must be [[agents]] tables")
    for index, entry in enumerate(entries):
        where = f"agents[{index}]"
        agent: dict[str, Any] = {}
        for key, value in entry.items():
            if key == "promptFile":
                if "systemPrompt" in entry:
                    raise file_error(path, text, where, key, "give systemPrompt or promptFile, not both")
                if base is None:
                    raise file_error(path, text, where, key, "a file sent over HTTP has no directory to read it from; give systemPrompt")
                prompt = base / str(value)
                try:
                    value = prompt.read_text(encoding="utf-8")
                except OSError as exc:
                    raise file_error(path, text, where, key, f"cannot read {prompt}: {exc.strerror or exc}") from None
                key = "systemPrompt"
            elif key not in AGENT_KEYS:
                raise file_error(path, text, where, key, f"unknown key (known: {', '.join(AGENT_KEYS)}, promptFile)")
            _refuse_secrets(path, text, where, key, value)
            if key == "model" and isinstance(value, str) and value.startswith("file:"):
                value = "file:" + _resolve(path, text, where, key, base, value[5:])
            agent[AGENT_KEYS[key]] = value
        for required in ("name", "provider", "model"):
            if required not in agent:
                raise file_error(path, text, where, "", f"{required} is required")
        agents.append(agent)
    return WorldFile(name=str(world["name"]), world=world, agents=agents, path=path, text=text)


def _resolve(path: Path, text: str, where: str, key: str, base: Path | None, value: str) -> str:
    """``value`` as an absolute path, relative to ``base``; a relative path with no base is
    refused (it would name a file relative to the server's working directory)."""
    given = Path(value).expanduser()
    if base is None:
        if not given.is_absolute():
            raise file_error(path, text, where, key, f"{value!r} is relative and a file sent over HTTP has no directory; give an absolute path")
        return str(given.resolve())
    return str((base / given).resolve())


def _refuse_secrets(path: Path, text: str, where: str, key: str, value: Any) -> None:
    """Refuse a value shaped like a key or password: the file holds variable names only."""
    from agentworld.redaction import find_secrets

    strings = [value] if isinstance(value, str) else re.findall(r'"((?:[^"\\]|\\.)*)"', json.dumps(value))
    for string in strings:
        if find_secrets(string):
            raise file_error(
                path, text, where, key,
                "holds what looks like a secret: put it in an environment variable and name the "
                "variable (apiKeyEnv, toolEnv, an MCP server's env) instead",
            )


def render_world_file(world: dict[str, Any], agents: list[dict[str, Any]]) -> str:
    """The TOML text of a world (its settings, defaults left out) and its agents."""
    lines = ["[world]"]
    mcp = world.get("mcp_config")
    for key, setting in WORLD_KEYS.items():
        if setting in world:
            lines.append(f"{key} = {toml_value(world[setting])}")
    for agent in agents:
        lines += ["", "[[agents]]"]
        for key, setting in AGENT_KEYS.items():
            if setting in agent:
                lines.append(f"{key} = {toml_value(agent[setting])}")
    for name, server in ((mcp or {}).get("mcpServers") or {}).items():
        lines += ["", f"[mcp.servers.{toml_key(name)}]"]
        lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in server.items()]
    return "\n".join(lines) + "\n"


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else toml_string(key)


def toml_string(text: str) -> str:
    """A basic TOML string: JSON's escapes are TOML's, except that TOML has no ``\\/`` (JSON
    never writes it) and needs every control character escaped (JSON does that)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(value: Any) -> str:
    """A TOML value for the shapes a world holds: strings, booleans, numbers, lists and
    tables (inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise InvalidInputError(f"cannot write {type(value).__name__} {value!r} to a world file")
