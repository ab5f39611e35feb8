"""Tool commands: `tools`, `tool-logs`, `pending` and `respond` (client-side tool results)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentworld.cli import output
from agentworld.cli.chats import report_run, still_running
from agentworld.cli.common import (
    JsonOpt,
    WorldArg,
    check_chat,
    parse_json_option,
    parse_seconds,
    run,
)

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld
    from agentworld.tools.sandbox import SandboxStatus

ChatOpt = Annotated[str | None, typer.Option("--chat", help="Only this chat.")]


def tools(world: WorldArg, json_out: JsonOpt = False) -> None:
    """List the tools the world's agents are offered (built-ins, client tools, MCP tools), and
    the MCP servers that are configured but unavailable, with the reason."""

    async def load(aw: AgentWorld) -> tuple[list[Any], list[dict[str, str]], SandboxStatus]:
        from agentworld.models.events import SystemEvent, WorldEvent
        from agentworld.tools.sandbox import sandbox_status

        reasons: dict[str, str] = {}

        def collect(event: WorldEvent) -> None:
            if isinstance(event, SystemEvent) and isinstance(server := event.context.get("mcp_server"), str):
                reasons.setdefault(server, event.text)

        unsubscribe = (await aw.runtime(world)).bus.subscribe(collect, kinds=["system"], name="tools-command")
        try:
            found = await aw.tools(world)
        finally:
            unsubscribe()
        settings = await aw.get_world(world)
        configured = settings.mcp_config or {}
        serving = {tool.server for tool in found}
        missing = [
            {"name": name, "reason": reasons.get(name, f"MCP server {name!r} offers no tools")}
            for name in configured.get("mcpServers", {})
            if name not in serving
        ]
        status = sandbox_status(settings.sandbox, settings.network, settings.working_dir)
        return found, missing, status

    found, unavailable, status = run(load)
    docs: list[dict[str, Any]] = [
        {
            "name": t.name,
            "description": t.description,
            "location": t.location,
            "server": t.server,
            "approval": {"required": t.approval.required, "scope": t.approval.scope},
            "annotations": t.annotations,
            "parameters": t.parameters,
        }
        for t in found
    ]
    for server in unavailable:
        output.warn(server["reason"])  # it may quote the server's own output
    if status.warning is not None:
        output.warn(f"world {world}: {status.warning}")
    contained = {**status.to_json(), "summary": status.describe()}
    if json_out:
        output.print_json({"tools": docs, "unavailableServers": unavailable, "sandbox": contained})
        return
    output.print_table(
        f"Tools of {world}",
        ["name", "location", "approval", "description"],
        [(d["name"], d["location"], "required" if d["approval"]["required"] else "", d["description"]) for d in docs],
    )
    output.print_fields("shell commands and stdio MCP servers", {"sandbox": status.describe()})


def tool_logs(world: WorldArg, chat: ChatOpt = None, json_out: JsonOpt = False) -> None:
    """Every tool execution: arguments (secrets redacted), result, status and duration."""

    async def load(aw: AgentWorld) -> list[Any]:
        await check_chat(aw, world, chat)
        return await aw.tool_logs(world, chat_id=chat)

    logs = run(load)
    if json_out:
        output.print_json({"toolLogs": [output.tool_log_doc(e) for e in logs]})
        return
    output.print_table(
        f"Tool executions in {world}",
        ["started", "agent", "tool", "status", "ms", "call id"],
        [(output.when(e.started_at), e.agent, e.tool_name, e.status, e.duration_ms, e.tool_call_id) for e in logs],
    )


def pending(world: WorldArg, chat: ChatOpt = None, json_out: JsonOpt = False) -> None:
    """Client-side tool calls waiting for their results."""

    async def load(aw: AgentWorld) -> list[Any]:
        await check_chat(aw, world, chat)
        return await aw.pending_calls(world, chat_id=chat)

    calls = run(load)
    docs = [output.pending_call_doc(c) for c in calls]
    if json_out:
        output.print_json({"pendingToolCalls": docs})
        return
    output.print_table(
        f"Pending tool calls in {world}",
        ["call id", "agent", "tool", "arguments"],
        [(d["toolCallId"], d["agent"], d["toolName"], d["toolArgs"]) for d in docs],
    )


def respond(
    world: WorldArg,
    tool_call_id: Annotated[
        str,
        typer.Argument(metavar="TOOL_CALL_ID", help="The waiting call's id, as `pending` shows it."),
    ],
    result: Annotated[str, typer.Option("--result", help="The tool's result, as JSON.")],
    error: Annotated[bool, typer.Option("--error", help="The tool failed; RESULT is the reason.")] = False,
    timeout: Annotated[float | None, typer.Option("--timeout", parser=parse_seconds, help="Seconds to wait for the world to go idle.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Post a client-side tool's result; the agent resumes; prints the messages produced."""
    value = parse_json_option(result, "--result")

    async def go(aw: AgentWorld) -> Any:
        return await aw.respond(world, tool_call_id, value, is_error=error, timeout=timeout)

    outcome = run(go)
    if outcome.timed_out:
        outcome.errors.append(still_running(world, timeout, outcome.running))
    report_run(outcome, json_out)
