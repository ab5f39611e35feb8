"""`agentworld world ...`: create, change and inspect worlds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentworld.cli import output
from agentworld.cli.common import JsonOpt, read_json_file, run

if TYPE_CHECKING:
    pass

app = typer.Typer(help="Create, change and inspect worlds.", no_args_is_help=True)



def _world_settings(
    *,
    turn_limit: int | None,
    description: str | None,
    approval_timeout: float | None,
    policy: list[Path] | None,
    mcp_config: Path | None,
    working_dir: Path | None,
    main_agent: str | None,
    max_iterations: int | None,
    streaming: bool | None,
    client_tools: Path | None,
    mode: str | None,
    allowed_tool: list[str] | None,
    excluded_tool: list[str] | None,
    hook: list[str] | None,
    tool_env: list[str] | None,
) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if hook:
        settings["hooks"] = hook
    if mode is not None:
        settings["policy_mode"] = mode
    if allowed_tool:
        settings["allowed_tools"] = allowed_tool
    if excluded_tool:
        settings["excluded_tools"] = excluded_tool
    if tool_env:
        settings["tool_env"] = tool_env
    if client_tools is not None:
        declared = read_json_file(client_tools, "client tools file")
        if not isinstance(declared, list) or not all(isinstance(d, dict) for d in declared):
            output.fail(f"client tools file {client_tools} must hold a JSON list of tool objects")
        settings["client_tools"] = declared
    if turn_limit is not None:
        settings["turn_limit"] = turn_limit
    if description is not None:
        settings["description"] = description
    if approval_timeout is not None:
        settings["approval_timeout"] = approval_timeout
    if policy:
        for file in policy:
            if not file.is_file():
                output.fail(f"policy file {file} does not exist")
        settings["policy_files"] = [str(p.expanduser().absolute()) for p in policy]
    if mcp_config is not None:
        config = read_json_file(mcp_config, "MCP config")
        if not isinstance(config, dict) or not isinstance(config.get("mcpServers"), dict):
            output.fail(f"MCP config {mcp_config} must be an object with an 'mcpServers' object")
        settings["mcp_config"] = config
    if working_dir is not None:
        if not working_dir.is_dir():
            output.fail(f"working directory {working_dir} does not exist")
        settings["working_dir"] = str(working_dir.expanduser().absolute())
    if main_agent is not None:
        settings["main_agent"] = main_agent or None
    if max_iterations is not None:
        settings["max_iterations"] = max_iterations
    if streaming is not None:
        settings["streaming"] = streaming
    return settings


TurnLimit = Annotated[int | None, typer.Option("--turn-limit", help="LLM calls per agent before a human must step in (default 5).")]
Description = Annotated[str | None, typer.Option("--description")]
ApprovalTimeout = Annotated[float | None, typer.Option("--approval-timeout", help="Seconds before an unanswered approval is denied (default 300; above 0, at most 31536000 = a year).")]
Policy = Annotated[list[Path] | None, typer.Option("--policy", help="Policy TOML file (repeatable).")]
McpConfig = Annotated[Path | None, typer.Option("--mcp-config", help='JSON file with {"mcpServers": {...}}.')]
WorkingDir = Annotated[Path | None, typer.Option("--working-dir", help="Directory the world's tools work in.")]
MainAgent = Annotated[str | None, typer.Option("--main-agent", help="Agent that answers unaddressed human messages alone.")]
MaxIterations = Annotated[int | None, typer.Option("--max-iterations", help="LLM iterations per message (default 10).")]
Streaming = Annotated[bool | None, typer.Option("--streaming/--no-streaming", help="Stream model output (default on).")]
Mode = Annotated[str | None, typer.Option("--mode", help="Policy mode: default | auto_edit | yolo.")]
AllowedTool = Annotated[list[str] | None, typer.Option("--allowed-tool", help="Legacy: always allow this tool (repeatable).")]
ExcludedTool = Annotated[list[str] | None, typer.Option("--excluded-tool", help="Legacy: always deny this tool (repeatable).")]
Hook = Annotated[list[str] | None, typer.Option("--hook", help="on_event hook by import path, module:function (repeatable).")]
ToolEnv = Annotated[list[str] | None, typer.Option("--tool-env", help="Pass this environment variable to tools (repeatable); API keys only when listed.")]
ClientTools = Annotated[Path | None, typer.Option("--client-tools", help="JSON list of client-side tools: [{name, description, parameters}].")]


def world_create_or_update(
    ctx: typer.Context,
    name: str,
    turn_limit: TurnLimit = None,
    description: Description = None,
    approval_timeout: ApprovalTimeout = None,
    policy: Policy = None,
    mcp_config: McpConfig = None,
    working_dir: WorkingDir = None,
    main_agent: MainAgent = None,
    max_iterations: MaxIterations = None,
    streaming: Streaming = None,
    client_tools: ClientTools = None,
    mode: Mode = None,
    allowed_tool: AllowedTool = None,
    excluded_tool: ExcludedTool = None,
    hook: Hook = None,
    tool_env: ToolEnv = None,
    json_out: JsonOpt = False,
) -> None:
    """`world create` and `world update` take the same options; update changes only those given."""
    options = {k: v for k, v in locals().items() if k not in ("ctx", "name", "json_out")}
    settings = _world_settings(**options)
    if ctx.info_name == "create":
        world = run(lambda aw: aw.create_world(name, **settings))
    else:
        world = run(lambda aw: aw.update_world(name, **settings))
    _show_world(world, json_out)


app.command("create", help="Create a world.")(world_create_or_update)
app.command("update", help="Change a world's settings (only the options given).")(world_create_or_update)


@app.command("list")
def world_list(json_out: JsonOpt = False) -> None:
    """List worlds."""
    worlds = run(lambda aw: aw.list_worlds())
    if json_out:
        output.print_json({"worlds": [output.world_doc(w) for w in worlds]})
        return
    output.print_table(
        "Worlds",
        ["name", "description", "turn limit", "current chat"],
        [(w.name, w.description, w.turn_limit, w.current_chat_id) for w in worlds],
    )


@app.command("show")
def world_show(name: str, json_out: JsonOpt = False) -> None:
    """Show one world."""
    _show_world(run(lambda aw: aw.get_world(name)), json_out)


@app.command("delete")
def world_delete(name: str, json_out: JsonOpt = False) -> None:
    """Delete a world with its agents, chats and messages."""
    run(lambda aw: aw.delete_world(name))
    if json_out:
        output.print_json({"deleted": name})
    else:
        typer.echo(f"deleted world {name}")


def _show_world(world: Any, json_out: bool) -> None:
    doc = output.world_doc(world)
    if json_out:
        output.print_json(doc)
    else:
        output.print_fields(f"world {world.name}", doc)


