"""`agentworld policy ...`: test a call against policy files, list and revoke a world's rules."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentworld.approval.shell_view import escape_controls
from agentworld.cli import output
from agentworld.cli.common import (
    JsonOpt,
    WorldArg,
    check_chat,
    parse_json_option,
    run,
    stored_agent_name,
    stored_world_name,
)

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld
    from agentworld.runtime.authorizer import CallVerdict

app = typer.Typer(help="Test tool calls against policies; list and revoke a world's rules.", no_args_is_help=True)


@app.command("test")
def policy_test(
    tool: Annotated[str, typer.Option("--tool", help="Tool name, e.g. shell_cmd or server__tool.")],
    world: Annotated[str | None, typer.Argument(metavar="WORLD", callback=stored_world_name, help="Decide as this world's runtime would: its tools, rules, mode and approvals.")] = None,
    args: Annotated[str, typer.Option("--args", help="The call's arguments as a JSON object.")] = "{}",
    server: Annotated[str | None, typer.Option("--server", help="The MCP server the call claims to come from.")] = None,
    policy: Annotated[list[Path] | None, typer.Option("--policy", help="Policy TOML file (repeatable, tier 2).")] = None,
    non_interactive: Annotated[bool, typer.Option("--non-interactive", help="ASK_USER becomes DENY.")] = False,
    mode: Annotated[str | None, typer.Option("--mode", help="default | auto_edit | yolo (default: the world's, else default).")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="With WORLD and --chat: count this agent's session approvals.")] = None,
    chat: Annotated[str | None, typer.Option("--chat", help="With WORLD and --agent: the chat of those session approvals.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Print the decision for one tool call and the rule that decided it.

    With WORLD: exactly what that world's runtime would decide (its tools, rules, mode, approvals). Without: the shipped defaults, the --policy files and the admin files of $AGENTWORLD_ADMIN_POLICY.
    """
    from agentworld.policy.rules import MODES

    if mode is not None and mode not in MODES:
        output.fail(f"--mode must be one of {', '.join(MODES)}", code=2)
    if (agent is None) != (chat is None) or (agent is not None and world is None):
        output.fail("--agent and --chat go together, and need WORLD", code=2)
    arguments = parse_json_option(args, "--args")
    if not tool.strip():
        output.fail("--tool is empty; give a tool name, e.g. shell_cmd", code=2)
    if server is not None and not server.strip():
        output.fail("--server is empty; give an MCP server name or leave it out", code=2)
    if not isinstance(arguments, dict):
        output.fail("--args must be a JSON object")
    files = [str(path) for path in policy or []]
    _check_files(files)
    if world is None:
        verdict = _decide_without_world(
            tool, arguments, server=server, files=files, mode=mode or "default",
            interactive=not non_interactive,
        )
    else:
        world_name = world

        async def decide(aw: AgentWorld) -> CallVerdict:
            # Session approvals of an agent or chat the world does not have would be none:
            # an answer then reads as if they had been counted. Unknown ones are refused.
            await check_chat(aw, world_name, chat)
            owner = None if agent is None else await stored_agent_name(aw, world_name, agent)
            return await aw.check_tool_call(
                world_name, tool, arguments, server=server, policy_files=files, mode=mode,
                interactive=not non_interactive, agent=owner, chat_id=chat,
            )

        verdict = run(decide)
    if json_out:
        output.print_json(verdict.to_json())
        return
    rule = verdict.rule
    typer.echo(verdict.decision.value)
    # The reason quotes the call (a shell line with a carriage return in it) and a rule's name
    # comes from a file: shown with every control character escaped, so neither can overwrite
    # or hide a part of the answer on the terminal.
    if rule is not None:
        where = rule.source + (f", rule {rule.index + 1}" if rule.index is not None else "")
        name = escape_controls(rule.name or "rule")
        typer.echo(f"  by {name} ({escape_controls(where)}, priority {rule.priority:.3f})")
    if verdict.reason:
        typer.echo(f"  {escape_controls(verdict.reason)}")


def _check_files(files: list[str]) -> None:
    """A broken --policy file is a mistake on the command line: say so, decide nothing."""
    from agentworld.errors import InvalidInputError
    from agentworld.runtime.authorizer import check_policy_files

    try:
        check_policy_files(files)
    except InvalidInputError as exc:
        output.fail(str(exc))


def _decide_without_world(
    tool: str, arguments: dict[str, Any], *, server: str | None, files: list[str], mode: str,
    interactive: bool,
) -> CallVerdict:
    """Shipped defaults, --policy files (tier 2) and admin files (tier 3): no world, so no tools
    of its own, no legacy lists and no approvals. A built-in file tool's path is also judged
    where it leads from the current directory (``.env/`` is ``.env``), as the runtime judges
    it from the world's working directory."""
    from agentworld.policy.engine import PolicyEngine
    from agentworld.runtime.authorizer import PolicyFiles, decide_call, load_rules
    from agentworld.runtime.path_views import file_call_views

    loaded = load_rules(PolicyFiles(), user_files=files)
    views = file_call_views(tool, arguments, os.getcwd()) if server is None else []
    return decide_call(
        PolicyEngine(loaded.rules, mode=mode), tool, arguments, server=server,
        errors=loaded.errors, interactive=interactive, views=views,
    )


@app.command("list")
def policy_list(world: WorldArg, json_out: JsonOpt = False) -> None:
    """Every rule in force for WORLD, highest priority first, with where it comes from: each
    tool's own default (for MCP tools: asks unless read-only or trusted), the shipped defaults,
    the world's files, legacy lists, "always" answers and the admin files."""

    async def load(aw: AgentWorld) -> Any:
        return await aw.policy_rules(world)

    rules = run(load)
    docs = [r.describe() for r in rules]
    if json_out:
        output.print_json({"rules": docs})
        return
    output.print_rules(world, docs)


@app.command("revoke")
def policy_revoke(
    world: WorldArg,
    rule_id: Annotated[str, typer.Argument(metavar="RULE_ID", help="always:GRANT_ID, as `policy list` shows it.")],
    json_out: JsonOpt = False,
) -> None:
    """Remove an auto-saved "always allow" rule (its id is in `policy list`: always:ID)."""
    grant_id = rule_id.removeprefix("always:")
    run(lambda aw: aw.revoke_grant(world, grant_id))
    if json_out:
        output.print_json({"revoked": grant_id})
    else:
        typer.echo(f"revoked {grant_id}")
