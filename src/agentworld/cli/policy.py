"""`agentworld policy ...`: test a call against policy files, list and revoke a world's rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentworld.cli import output
from agentworld.cli.common import JsonOpt, run

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld

app = typer.Typer(help="Test tool calls against policies; list and revoke a world's rules.", no_args_is_help=True)


@app.command("test")
def policy_test(
    tool: Annotated[str, typer.Option("--tool", help="Tool name, e.g. shell_cmd or server__tool.")],
    args: Annotated[str, typer.Option("--args", help="The call's arguments as a JSON object.")] = "{}",
    server: Annotated[str | None, typer.Option("--server", help="The MCP server the call claims to come from.")] = None,
    policy: Annotated[list[Path] | None, typer.Option("--policy", help="Policy TOML file (repeatable, tier 2).")] = None,
    non_interactive: Annotated[bool, typer.Option("--non-interactive", help="ASK_USER becomes DENY.")] = False,
    mode: Annotated[str, typer.Option("--mode", help="default | auto_edit | yolo")] = "default",
    json_out: JsonOpt = False,
) -> None:
    """Print the decision for one tool call and the rule that decided it (SPEC P9)."""
    from agentworld.policy.engine import PolicyEngine
    from agentworld.policy.loader import builtin_rules, load_policy_file
    from agentworld.policy.rules import MODES

    if mode not in MODES:
        output.fail(f"--mode must be one of {', '.join(MODES)}", code=2)
    try:
        arguments = json.loads(args)
    except ValueError as exc:
        output.fail(f"--args is not valid JSON: {exc}")
    if not isinstance(arguments, dict):
        output.fail("--args must be a JSON object")
    rules = builtin_rules()
    for path in policy or []:
        loaded = load_policy_file(path)
        if loaded.errors:
            output.fail("; ".join(str(e) for e in loaded.errors))
        rules.extend(loaded.rules)
    engine = PolicyEngine(rules, mode=mode, non_interactive=non_interactive)
    result = engine.evaluate(tool, arguments, server)
    if json_out:
        output.print_json(result.to_json())
        return
    rule = result.rule
    typer.echo(result.decision.value)
    if rule is not None:
        where = rule.source + (f", rule {rule.index}" if rule.index is not None else "")
        typer.echo(f"  by {rule.name or 'rule'} ({where}, priority {rule.priority:.3f})")
    if result.reason:
        typer.echo(f"  {result.reason}")


@app.command("list")
def policy_list(world: str, json_out: JsonOpt = False) -> None:
    """Every rule in force for WORLD, highest priority first, with where it comes from."""

    async def load(aw: AgentWorld) -> Any:
        return await aw.policy_rules(world)

    rules = run(load)
    docs = [r.describe() for r in rules]
    if json_out:
        output.print_json({"rules": docs})
        return
    output.print_table(
        f"Policy of {world}",
        ["priority", "decision", "tool", "match", "source"],
        [
            (
                f"{d['priority']:.3f}",
                d["decision"],
                d["toolName"] or "*",
                d["commandPrefix"] or d["commandRegex"] or d["argsPattern"] or "",
                d["source"] + (f" #{d['index']}" if d["index"] is not None else ""),
            )
            for d in docs
        ],
    )


@app.command("revoke")
def policy_revoke(world: str, rule_id: str, json_out: JsonOpt = False) -> None:
    """Remove an auto-saved "always allow" rule (its id is in `policy list`: always:ID)."""
    grant_id = rule_id.removeprefix("always:")
    run(lambda aw: aw.revoke_grant(world, grant_id))
    if json_out:
        output.print_json({"revoked": grant_id})
    else:
        typer.echo(f"revoked {grant_id}")
