"""A world file's plan and its application (SPEC §7.4 D1), shared by ``agentworld apply``
and ``POST /api/worlds/apply``.

The plan says what to create, update or delete so the stored world matches the file: the
world's settings, its agents, its own policy rules. The file is checked when planned as the
``world``/``agent`` commands check their options, so ``--dry-run`` refuses what ``apply``
would; the plan is then stored in one transaction (``AgentWorld.apply_world``), checked
again there as the one-by-one methods check: refused anywhere, nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld
    from agentworld.models import Agent, World
    from agentworld.world_file import WorldFile

_NOT_EXPORTED = ("name", "current_chat_id", "created_at", "updated_at", "mcp_config")
_AGENT_STATE = ("world", "status", "llm_call_count", "last_active", "created_at")


@dataclass(frozen=True)
class Change:
    """One step of a plan: create, update or delete the world, an agent or a policy rule, and
    the settings (or a rule's keys) that change."""

    action: str
    kind: str
    name: str
    fields: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Plan:
    """What ``apply`` does: the changes, the agents and rules kept because the file does not
    hold them and ``--prune`` was not given, and the world's rules once applied (the file's,
    then those kept)."""

    changes: list[Change]
    kept: list[str]
    kept_rules: list[str]
    rules: list[dict[str, Any]]


def _defaults(model: Any) -> dict[str, Any]:
    return {
        name: info.get_default(call_default_factory=True)
        for name, info in model.model_fields.items()
        if not info.is_required()
    }


def world_settings(world: World) -> dict[str, Any]:
    """The world's settings as the file holds them: defaults and state left out."""
    from agentworld.models import World

    defaults = _defaults(World)
    dump = world.model_dump()
    settings: dict[str, Any] = {"name": world.name}
    settings.update({k: v for k, v in dump.items() if k not in _NOT_EXPORTED and v != defaults.get(k)})
    if world.mcp_config:
        settings["mcp_config"] = world.mcp_config
    return settings


def agent_settings(agent: Agent) -> dict[str, Any]:
    from agentworld.models import Agent

    defaults = _defaults(Agent)
    dump = agent.model_dump()
    return {k: v for k, v in dump.items() if k not in _AGENT_STATE and (k in ("name", "provider", "model") or v != defaults.get(k))}


async def plan(aw: AgentWorld, wanted: WorldFile, *, prune: bool) -> Plan:
    """The changes that make the stored world match ``wanted``, and what is kept because it is
    not in the file and ``prune`` was not asked for. The file's settings are checked here as
    ``world create``/``agent create`` check them, so ``--dry-run`` refuses what ``apply``
    would."""
    from agentworld.errors import InvalidInputError, NotFoundError
    from agentworld.models import Agent, World
    from agentworld.settings_checks import (
        build_settings,
        check_agent_settings,
        check_world_settings,
    )

    try:
        desired = build_settings(World, wanted.world)
        check_world_settings(desired)
    except InvalidInputError as exc:
        raise wanted.settings_error("world", exc) from None
    changes: list[Change] = []
    try:
        current: World | None = await aw.get_world(wanted.name)
    except NotFoundError:
        current = None
    desired_doc = world_settings(desired)
    desired_doc.pop("policy_rules", None)  # planned rule by rule, below
    if current is None:
        changes.append(Change("create", "world", wanted.name, sorted(k for k in desired_doc if k != "name")))
        stored: list[Agent] = []
    else:
        now = world_settings(current)
        now.pop("policy_rules", None)
        differ = sorted(k for k in set(now) | set(desired_doc) if k != "name" and now.get(k) != desired_doc.get(k))
        if differ:
            changes.append(Change("update", "world", current.name, differ))
        stored = await aw.list_agents(current.name)
    by_name = {agent.name.lower(): agent for agent in stored}
    seen: set[str] = set()
    for index, entry in enumerate(wanted.agents):
        try:
            agent = build_settings(Agent, {"world": wanted.name, **entry})
            check_agent_settings(agent, builtin_providers=True)
        except InvalidInputError as exc:
            raise wanted.settings_error(f"agents[{index}]", exc) from None
        key = agent.name.lower()
        if key in seen:
            raise _invalid(f"agent {agent.name!r} appears twice in the file")
        seen.add(key)
        want = agent_settings(agent)
        have = by_name.get(key)
        if have is None:
            changes.append(Change("create", "agent", agent.name, sorted(k for k in want if k != "name")))
            continue
        now = agent_settings(have)
        differ = sorted(k for k in set(now) | set(want) if k != "name" and now.get(k) != want.get(k))
        if differ:
            changes.append(Change("update", "agent", have.name, differ))
    extra = [agent.name for agent in stored if agent.name.lower() not in seen]
    if prune:
        changes += [Change("delete", "agent", name) for name in extra]
    rule_changes, kept_rules, rules = plan_rules(current.policy_rules if current else [], desired.policy_rules, prune=prune)
    return Plan(changes + rule_changes, [] if prune else extra, kept_rules, rules)


def _invalid(message: str) -> Exception:
    from agentworld.errors import InvalidInputError

    return InvalidInputError(message)


async def carry_out(aw: AgentWorld, wanted: WorldFile, planned: Plan) -> None:
    """Store the plan in one transaction (``AgentWorld.apply_world``): the world's settings as
    the file gives them, with the rules the plan keeps, and the agents to create, change and
    delete."""
    import os

    from agentworld.models import Agent, World
    from agentworld.settings_checks import build_settings

    changes = planned.changes
    create = any(c.kind == "world" and c.action == "create" for c in changes)
    settings: dict[str, Any] = {**wanted.world, "name": wanted.name, "policy_rules": planned.rules}
    if create:
        settings.setdefault("working_dir", os.getcwd())  # as ``create_world`` does
    world = build_settings(World, settings)
    stored = {a.name.lower(): a for a in ([] if create else await aw.list_agents(wanted.name))}
    created: list[Agent] = []
    updated: list[Agent] = []
    for change in changes:
        if change.kind != "agent" or change.action == "delete":
            continue
        entry = next(a for a in wanted.agents if a["name"].lower() == change.name.lower())
        if change.action == "create":
            created.append(build_settings(Agent, {"world": wanted.name, **entry}))
        else:
            have = stored[change.name.lower()]
            values = _agent_values(entry, change.fields)
            updated.append(build_settings(Agent, {**have.model_dump(), **values, "world": wanted.name, "name": have.name}))
    deleted = [c.name for c in changes if c.kind == "agent" and c.action == "delete"]
    await aw.apply_world(world, create=create, created=created, updated=updated, deleted=deleted)


def _agent_values(entry: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    from agentworld.models import Agent

    defaults = _defaults(Agent)
    return {k: entry.get(k, defaults.get(k)) for k in fields}


def file_key(setting: str) -> str:
    """The file's name of a setting (``turnLimit`` for ``turn_limit``)."""
    from agentworld.world_file import AGENT_KEYS, WORLD_KEYS

    if setting == "mcp_config":
        return "mcp.servers"
    if setting == "policy_rules":
        return "rules"
    names = {v: k for k, v in {**WORLD_KEYS, **AGENT_KEYS}.items()}
    return names.get(setting, setting)


def plan_doc(name: str, planned: Plan, dry_run: bool) -> dict[str, Any]:
    """The plan as ``apply --json`` and the HTTP API show it, with the file's key names (a
    rule's fields are its own keys already)."""
    shown = [
        {**c.__dict__, "fields": c.fields if c.kind == "rule" else [file_key(k) for k in c.fields]}
        for c in planned.changes
    ]
    return {"world": name, "changes": shown, "kept": planned.kept, "keptRules": planned.kept_rules, "dryRun": dry_run}


async def export_text(aw: AgentWorld, world: str) -> str:
    """The world file ``apply`` reads for the stored world: settings and agents, no secrets."""
    from agentworld.world_file import render_world_file

    stored = await aw.get_world(world)
    agents = await aw.list_agents(stored.name)
    return render_world_file(world_settings(stored), [agent_settings(a) for a in agents])


async def apply_file(aw: AgentWorld, wanted: WorldFile, *, dry_run: bool, prune: bool) -> Plan:
    """Plan ``wanted`` against the stored world and, unless ``dry_run``, carry the plan out."""
    planned = await plan(aw, wanted, prune=prune)
    if planned.changes and not dry_run:
        await carry_out(aw, wanted, planned)
    return planned


def plan_rules(
    stored: list[dict[str, Any]], wanted: list[dict[str, Any]], *, prune: bool
) -> tuple[list[Change], list[str], list[dict[str, Any]]]:
    """The changes that make the world's own rules the file's: a rule with a ``name`` is the
    stored rule of that name (updated when its keys differ), one without is a stored rule
    with exactly its keys, else it is created. Stored rules the file does not hold are
    deleted with ``prune``, else kept after the file's. A rule that moved among those kept
    changes its ``position`` (order breaks ties of priority). Returns the changes, the rules
    kept and the rules the world then holds."""
    waiting: dict[str, list[int]] = {}
    for index, rule in enumerate(stored):
        waiting.setdefault(_rule_identity(rule), []).append(index)
    changes: list[Change] = []
    matched: list[tuple[int, int]] = []
    seen: set[str] = set()
    for index, rule in enumerate(wanted):
        named = rule.get("name")
        if isinstance(named, str) and named:
            if named.lower() in seen:
                raise _invalid(f"rules: two rules are named {named!r}; a rule's name must be its own")
            seen.add(named.lower())
        found = waiting.get(_rule_identity(rule))
        if not found:
            changes.append(Change("create", "rule", _rule_label(rule, index), sorted(rule)))
            continue
        old = found.pop(0)
        matched.append((index, old))
        differ = sorted(k for k in set(rule) | set(stored[old]) if rule.get(k) != stored[old].get(k))
        if differ:
            changes.append(Change("update", "rule", _rule_label(rule, index), differ))
    in_order = sorted(old for _, old in matched)
    for rank, (index, old) in enumerate(matched):
        if in_order[rank] != old:
            label = _rule_label(wanted[index], index)
            earlier = next((c for c in changes if c.kind == "rule" and c.name == label and c.action == "update"), None)
            if earlier is None:
                changes.append(Change("update", "rule", label, ["position"]))
            else:
                earlier.fields.append("position")
    left = sorted(i for indices in waiting.values() for i in indices)
    labels = [_rule_label(stored[i], i) for i in left]
    if prune:
        return changes + [Change("delete", "rule", label) for label in labels], [], list(wanted)
    return changes, labels, [*wanted, *(stored[i] for i in left)]


def _rule_identity(rule: dict[str, Any]) -> str:
    """What makes a stored rule the file's: its name, or all its keys when it has none."""
    import json

    named = rule.get("name")
    if isinstance(named, str) and named:
        return "name:" + named.lower()
    return "keys:" + json.dumps(rule, sort_keys=True)


def _rule_label(rule: dict[str, Any], index: int) -> str:
    """How the plan names a rule: its name, else its number (from 1), decision and tools."""
    named = rule.get("name")
    if isinstance(named, str) and named:
        return named
    tools = rule.get("toolName", "*")
    tool = ",".join(map(str, tools)) if isinstance(tools, list) else str(tools)
    if rule.get("mcpName"):
        tool = f"{rule['mcpName']}__{'*' if tool == '*' else tool}"
    return f"#{index + 1} {rule.get('decision', '?')} {tool}"
