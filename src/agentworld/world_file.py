"""The world file (SPEC §7.4 D1): one TOML file holding a world's settings, its agents, its
own policy rules (``[[rules]]``) and its MCP servers, read by ``agentworld apply`` and written by ``agentworld export``.

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
    "workerQueue": "worker_queue",
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
        if top not in ("world", "agents", "rules", "mcp"):
            raise file_error(path, text, top, "", "unknown table (use world, agents, rules, mcp)")
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
    if "rules" in data:
        world["policy_rules"] = _rules(path, text, data["rules"])
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


def _rules(path: Path, text: str, tables: Any) -> list[dict[str, Any]]:
    """The ``[[rules]]`` tables, checked by the policy file reader (the same keys as a policy
    file's ``[[rule]]``); the first problem is named by its rule's line and key."""
    from agentworld.policy.loader import load_policy_tables
    from agentworld.runtime.policy_files import WORLD_RULES_SOURCE

    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise file_error(path, text, "rules", "", "must be [[rules]] tables")
    for index, table in enumerate(tables):
        _refuse_secrets(path, text, f"rules[{index}]", "", table)
    for error in load_policy_tables(tables, source=WORLD_RULES_SOURCE).errors:
        where = "rules" if error.rule is None else f"rules[{error.rule}]"
        message = error.message.removeprefix(f"{error.key}: ") if error.key else error.message
        raise file_error(path, text, where, error.key or "", message)
    named: set[str] = set()
    for index, table in enumerate(tables):
        name = str(table.get("name") or "").lower()
        if name and name in named:
            raise file_error(path, text, f"rules[{index}]", "name", "another rule has this name; the plan knows a rule by its name")
        named.add(name)
    return tables


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
    """The TOML text of a world (its settings, defaults left out), its agents, its own rules
    and its MCP servers, written by tomli-w: ``[world]``, one ``[[agents]]`` and ``[[rules]]``
    table each (written one by one: tomli-w would fold a short one into a one-line inline
    table), then ``[mcp.servers.NAME]``. Text with line breaks (prompts) is written as
    multi-line strings, which read best -- unless some text holds a carriage return: TOML reads
    a multi-line string's CR LF as LF, so then every string is written on one line, keeping
    the round trip exact."""
    import tomli_w

    from agentworld.policy.loader import RULE_KEYS

    order = {key: place for place, key in enumerate(RULE_KEYS)}
    sections: list[tuple[str, dict[str, Any]]] = [
        ("", {"world": {key: world[setting] for key, setting in WORLD_KEYS.items() if setting in world}}),
        *(("[[agents]]\n", {key: agent[setting] for key, setting in AGENT_KEYS.items() if setting in agent}) for agent in agents),
        *(
            ("[[rules]]\n", dict(sorted(rule.items(), key=lambda item: order.get(item[0], len(order)))))
            for rule in world.get("policy_rules") or []
        ),
    ]
    servers = (world.get("mcp_config") or {}).get("mcpServers") or {}
    if servers:
        sections.append(("", {"mcp": {"servers": servers}}))
    multiline = not _holds_carriage_return([table for _, table in sections])
    try:
        return "\n".join(header + tomli_w.dumps(table, multiline_strings=multiline) for header, table in sections)
    except TypeError as exc:
        raise InvalidInputError(f"cannot write a world file: {exc}") from None


def _holds_carriage_return(value: Any) -> bool:
    if isinstance(value, str):
        return "\r" in value
    if isinstance(value, dict):
        return any(_holds_carriage_return(k) or _holds_carriage_return(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_carriage_return(v) for v in value)
    return False
