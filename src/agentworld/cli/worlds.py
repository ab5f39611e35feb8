"""`agentworld world ...`: create, change and inspect worlds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentworld.cli import output
from agentworld.cli.common import (
    JsonOpt,
    parse_max_iterations,
    parse_seconds,
    parse_turn_limit,
    read_json_file,
    run,
    stored_world_name,
    usd_settings,
)

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld
    from agentworld.models.domain import World

SANDBOX_MODES = ("auto", "on", "off")
"""``models.domain.SandboxMode`` (not imported: ``--help`` loads no pydantic)."""
NETWORK_MODES = ("deny", "allow")
"""``models.domain.NetworkMode``."""

app = typer.Typer(help="Create, change and inspect worlds.", no_args_is_help=True)



def _world_settings(
    *,
    turn_limit: int | None,
    description: str | None,
    approval_timeout: float | None,
    policy: list[str] | None,
    mcp_config: str | None,
    working_dir: Path | None,
    main_agent: str | None,
    max_iterations: int | None,
    streaming: bool | None,
    client_tools: str | None,
    mode: str | None,
    allowed_tool: list[str] | None,
    excluded_tool: list[str] | None,
    hook: list[str] | None,
    tool_env: list[str] | None,
    sandbox: str | None,
    network: str | None,
    worker_queue: str | None = None,
    budget: str | None = None,
) -> dict[str, Any]:
    """The settings the options give. An empty value clears a setting: ``--policy ''``,
    ``--mcp-config ''``, ``--client-tools ''``, ``--hook ''``, ``--main-agent ''`` …"""
    settings: dict[str, Any] = dict(usd_settings({"budget": budget}))
    for key, values in (
        ("hooks", hook),
        ("allowed_tools", allowed_tool),
        ("excluded_tools", excluded_tool),
        ("tool_env", tool_env),
    ):
        if values:
            settings[key] = [value for value in values if value]
    if mode is not None:
        from agentworld.policy.rules import MODES

        if mode not in MODES:
            output.fail(f"--mode must be one of {', '.join(MODES)}", code=2)
        settings["policy_mode"] = mode
    for key, value, allowed in (
        ("sandbox", sandbox, SANDBOX_MODES),
        ("network", network, NETWORK_MODES),
    ):
        if value is not None:
            if value not in allowed:
                output.fail(f"--{key} must be one of {', '.join(allowed)}, not {value!r}", code=2)
            settings[key] = value
    if client_tools is not None:
        settings["client_tools"] = _client_tools(client_tools) if client_tools else []
    if turn_limit is not None:
        settings["turn_limit"] = turn_limit
    if description is not None:
        settings["description"] = description
    if approval_timeout is not None:
        settings["approval_timeout"] = approval_timeout
    if policy:
        files = [Path(name).expanduser() for name in policy if name]
        for file in files:
            if not file.is_file():
                what = "is not a file" if file.exists() else "does not exist"
                output.fail(f"--policy: {file} {what}")
        settings["policy_files"] = [str(file.absolute()) for file in files]
    if mcp_config is not None:
        settings["mcp_config"] = _mcp_config(mcp_config) if mcp_config else None
    if working_dir is not None:
        directory = working_dir.expanduser()
        if not directory.is_dir():
            what = "is not a directory" if directory.exists() else "does not exist"
            output.fail(f"--working-dir: {working_dir} {what}")
        settings["working_dir"] = str(directory.absolute())
    if main_agent is not None:
        settings["main_agent"] = main_agent or None
    if worker_queue is not None:
        settings["worker_queue"] = worker_queue or None
    if max_iterations is not None:
        settings["max_iterations"] = max_iterations
    if streaming is not None:
        settings["streaming"] = streaming
    return settings


def _client_tools(file: str) -> list[Any]:
    declared = read_json_file(Path(file).expanduser(), "--client-tools file")
    if not isinstance(declared, list) or not all(isinstance(d, dict) for d in declared):
        output.fail(f"--client-tools: {file} must hold a JSON list of tool objects")
    return declared


def _mcp_config(file: str) -> dict[str, Any]:
    config = read_json_file(Path(file).expanduser(), "--mcp-config file")
    if not isinstance(config, dict) or not isinstance(config.get("mcpServers"), dict):
        output.fail(f"--mcp-config: {file} must hold an object with an 'mcpServers' object")
    return config


WorldName = Annotated[
    str,
    typer.Argument(
        metavar="NAME",
        help="The world's name (letters, digits, _ and -; one name whatever its case).",
        callback=stored_world_name,
    ),
]
TurnLimit = Annotated[int | None, typer.Option("--turn-limit", parser=parse_turn_limit, help="LLM calls per agent before a human must step in (default 5, at most 10000).")]
Description = Annotated[str | None, typer.Option("--description", help="What the world is for.")]
ApprovalTimeout = Annotated[float | None, typer.Option("--approval-timeout", parser=parse_seconds, help="Seconds before an unanswered approval is denied (default 300; above 0, at most 31536000 = a year).")]
Policy = Annotated[list[str] | None, typer.Option("--policy", help="Policy TOML file (repeatable; replaces the list; '' clears it).")]
McpConfig = Annotated[str | None, typer.Option("--mcp-config", help='JSON file with {"mcpServers": {...}} (\'\' removes the MCP servers).')]
WorkingDir = Annotated[Path | None, typer.Option("--working-dir", help="Directory the world's tools work in (default: the current directory).")]
MainAgent = Annotated[str | None, typer.Option("--main-agent", help="An agent of the world that answers unaddressed human messages alone ('' clears it).")]
MaxIterations = Annotated[int | None, typer.Option("--max-iterations", parser=parse_max_iterations, help="LLM iterations per message (default 10, at most 1000).")]
Streaming = Annotated[bool | None, typer.Option("--streaming/--no-streaming", help="Stream model output (default on).")]
Mode = Annotated[str | None, typer.Option("--mode", help="Policy mode: default | auto_edit | yolo.")]
AllowedTool = Annotated[list[str] | None, typer.Option("--allowed-tool", help="Legacy: always allow this tool, or 'prefix*' (repeatable; '' clears).")]
ExcludedTool = Annotated[list[str] | None, typer.Option("--excluded-tool", help="Legacy: always deny this tool, or 'prefix*' (repeatable; '' clears).")]
Hook = Annotated[list[str] | None, typer.Option("--hook", help="on_event hook by import path, module:function; the module must be importable (repeatable; '' clears).")]
ToolEnv = Annotated[list[str] | None, typer.Option("--tool-env", help="Pass this environment variable to tools (repeatable; '' clears); API keys only when listed.")]
Sandbox = Annotated[str | None, typer.Option("--sandbox", help="Run shell commands and stdio MCP servers in a sandbox (bubblewrap): auto (where one can be made, else warn), on (refuse without one), off.")]
Network = Annotated[str | None, typer.Option("--network", help="Whether sandboxed commands reach the network: deny (default) | allow.")]
WorkerQueue = Annotated[str | None, typer.Option("--worker-queue", help="On Temporal: the task queue of the workers that hold the working directory ('' clears: the deployment's queue).")]
Budget = Annotated[str | None, typer.Option("--budget", help="USD a chat may cost; reached, agents hand back to a person, who keeps control ('' clears).")]
ClientTools = Annotated[str | None, typer.Option("--client-tools", help="JSON list of client-side tools: [{name, description, parameters}] ('' clears).")]


def world_create_or_update(
    ctx: typer.Context,
    name: WorldName,
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
    sandbox: Sandbox = None,
    network: Network = None,
    worker_queue: WorkerQueue = None,
    budget: Budget = None,
    json_out: JsonOpt = False,
) -> None:
    """`world create` and `world update` take the same options; update changes only those given."""
    options = {k: v for k, v in locals().items() if k not in ("ctx", "name", "json_out")}
    settings = _world_settings(**options)
    if ctx.info_name == "create":
        if main_agent := settings.get("main_agent"):
            output.fail(
                f"--main-agent: a new world has no agents yet; create {main_agent!r} first, then "
                f"run: {output.command('world', 'update', name, '--main-agent', main_agent)}"
            )
        world = run(lambda aw: _create_world(aw, name, settings))
    else:
        world = run(lambda aw: aw.update_world(name, **settings))
    _show_world(world, json_out)


async def _create_world(aw: AgentWorld, name: str, settings: dict[str, Any]) -> World:
    """Create the world; a name that is taken says how to use that world or start over."""
    from agentworld.errors import AlreadyExistsError

    try:
        return await aw.create_world(name, **settings)
    except AlreadyExistsError as exc:
        stored = await aw.world_name(name)
        raise AlreadyExistsError(
            f"{exc}; use it as it is ({output.command('world', 'show', stored)}), "
            f"or start over with: {output.command('world', 'delete', stored)}"
        ) from exc


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
def world_show(name: WorldName, json_out: JsonOpt = False) -> None:
    """Show one world."""
    _show_world(run(lambda aw: aw.get_world(name)), json_out)


@app.command("delete")
def world_delete(name: WorldName, json_out: JsonOpt = False) -> None:
    """Delete a world with its agents, chats and messages."""
    run(lambda aw: aw.delete_world(name))
    if json_out:
        output.print_json({"deleted": name})
    else:
        typer.echo(f"deleted world {name}")


def _show_world(world: World, json_out: bool) -> None:
    """The world's settings; where its commands run (the sandbox status) in the text, and a
    warning on stderr when they would run uncontained or refuse to run (SPEC C1)."""
    from agentworld.tools.sandbox import sandbox_status

    doc = output.world_doc(world)
    status = sandbox_status(world.sandbox, world.network, world.working_dir)
    if json_out:
        output.print_json(doc)
    else:
        output.print_fields(f"world {world.name}", {**doc, "containment": status.describe()})
    if status.warning is not None:
        output.warn(f"world {world.name}: {status.warning}")


