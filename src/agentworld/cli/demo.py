"""``agentworld demo``: scripted agents at work, offline, in a temporary database.

It runs the real runtime — storage, event bus, routing, the tool loop, the policy
engine and the approval flow, with real files and a real shell in a temp directory;
only the models are scripted, so it works with no API key and no network.

Act 1: two agents plan a release by @mention until one ends it with a world tag.
Act 2: an ops agent reads a file (allowed by policy), then wants to run a shell
command (asks a person), and the demo approves it the way `agentworld approve` would.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agentworld.agent_world import AgentWorld
from agentworld.models import Agent, LLMResponse, ToolCall
from agentworld.models.events import MessageEvent, WorldEvent
from agentworld.providers.base import LLMProvider, LLMRequest
from agentworld.providers.scripted import ScriptedProvider, last_user_text


def _planner(request: LLMRequest) -> LLMResponse:
    said = last_user_text(request)
    if "[critic]" in said:
        return LLMResponse.text("Agreed, I will add a rollback step. <world>DONE</world>")
    return LLMResponse.text(
        "@critic Plan for the release: 1) freeze main, 2) run the test suite, "
        "3) tag and publish. What did I miss?"
    )


def _critic(request: LLMRequest) -> LLMResponse:
    said = last_user_text(request)
    if "[planner]" in said:
        return LLMResponse.text("You have no way back if publishing fails: add a rollback step.")
    return LLMResponse.text("I only review plans; ask @planner first.")


def _ops(request: LLMRequest) -> LLMResponse:
    """Read the notes, then ask to mark the release, then report what the shell said."""
    tool_turns = [m for m in request.messages if m.role == "tool"]
    if not tool_turns:
        return LLMResponse.calls([ToolCall.of("call_read", "read_file", json.dumps({"path": "NOTES.md"}))])
    if len(tool_turns) == 1:
        return LLMResponse.calls(
            [ToolCall.of("call_mark", "shell_cmd", json.dumps({"command": "touch RELEASED && ls"}))]
        )
    listing = json.loads(tool_turns[-1].content or "{}").get("stdout", "").split()
    return LLMResponse.text(f"Release marked. The folder now holds: {', '.join(listing)}.")


_SCRIPTS = {"planner": _planner, "critic": _critic, "ops": _ops}


def _demo_provider(agent: Agent) -> LLMProvider:
    return ScriptedProvider(_SCRIPTS[agent.name], chunk_size=6)


def _show(console: Console) -> object:
    def show(event: WorldEvent) -> None:
        if not isinstance(event, MessageEvent):
            return
        message = event.message
        if message.role == "tool":
            flat = " ".join((message.content or "").split())
            console.print(f"[dim]   ↳ result: {escape(flat[:90])}[/dim]")
            return
        for call in message.tool_calls or ():
            if not call.function.name.startswith("client."):
                console.print(
                    f"[yellow]{escape(message.sender)} calls {escape(call.function.name)}"
                    f"({escape(call.function.arguments)})[/yellow]"
                )
        if message.content:
            style = {"assistant": "cyan", "system": "red"}.get(message.role, "green")
            console.print(f"[bold {style}]{escape(message.sender)}[/bold {style}]: {escape(message.content)}\n")

    return show


async def run_demo(console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    with tempfile.TemporaryDirectory(prefix="agentworld-demo-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        (work / "NOTES.md").write_text("v2.0: faster turns, human approvals, policies\n")
        db = f"sqlite:///{Path(tmp) / 'demo.db'}"
        async with AgentWorld(db, provider_factory=_demo_provider) as aw:
            await aw.create_world("demo", description="an offline demo world", working_dir=str(work))
            for name, prompt in (
                ("planner", "You plan releases and ask the critic to review."),
                ("critic", "You review plans."),
                ("ops", "You run release chores with tools."),
            ):
                await aw.create_agent("demo", name, provider="scripted", model="echo", system_prompt=prompt)
            runtime = await aw.runtime("demo")
            runtime.bus.subscribe(_show(console), name="demo-console")  # type: ignore[arg-type]
            console.print(f"[dim]database: {db}\nworking directory: {work}[/dim]\n")

            console.rule("Act 1: agents talk by @mention")
            await aw.send("demo", "@planner how should we ship version 2.0?")

            console.rule("Act 2: tools, policy and a human approval")
            result = await aw.send("demo", "@ops read the release notes and mark the release")
            (request,) = result.pending_approvals
            console.print(f"[bold yellow]approval needed[/bold yellow]: {escape(request.message)}")
            console.print(
                f"[dim]  (from a terminal: agentworld approve demo {request.tool_call_id} "
                "--decision approve)[/dim]"
            )
            console.print("[dim]  the demo approves it once, in code...[/dim]\n")
            await aw.approve("demo", request.tool_call_id, decision="approve", scope="once")

            chats = await aw.list_chats("demo")
            audit = await aw.audit_log("demo")
            console.rule("Stored")
            console.print(
                f"[dim]chat '{chats[0].name}'; RELEASED exists: {(work / 'RELEASED').exists()}; "
                f"audit entries: {len(audit)} ({', '.join(e['event'] + '/' + str(e['decision']) for e in audit)})[/dim]"
            )
