"""``agentworld demo``: scripted agents at work, offline, in a temporary database.

It runs the real runtime — storage, event bus, routing, the tool loop, the policy
engine and the approval flow, with real files and a real shell in a temp directory;
only the models are scripted, so it works with no API key and no network.

Act 1: two agents plan a release by @mention until one ends it with a world tag.
Act 2: an ops agent reads a file (allowed by policy), then wants to run a shell
command (asks a person), and the demo approves it the way `agentworld approve` would.
Each tool call is shown with the policy's decision for it, and every line fits 80 columns.
"""

from __future__ import annotations

import json
import tempfile
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agentworld.agent_world import AgentWorld
from agentworld.cli.output import (
    approval_answer,
    approval_request_text,
    is_approval_request,
    result_summary,
)
from agentworld.models import Agent, LLMResponse, ToolCall
from agentworld.models.events import MessageEvent, WorldEvent
from agentworld.providers.base import LLMProvider, LLMRequest
from agentworld.providers.scripted import ScriptedProvider, last_user_text

WIDTH = 80
"""The demo never prints a line wider than this, whatever the terminal's width."""

TRY_NEXT = (
    "agentworld world create playground",
    "agentworld agent create playground helper --provider scripted --model echo",
    'agentworld send playground "@helper hello"',
)
"""Three commands that work right after the demo, with no API key (the default database).
Their world is not the README walkthrough's ``team``, so a reader can do both, in any order."""


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


def _show(console: Console, aw: AgentWorld) -> Callable[[WorldEvent], Awaitable[None]]:
    """Print each message as it is published, and for each tool call the policy's decision:
    the same evaluation the runtime makes next (and `agentworld policy test WORLD` prints)."""

    def say(line: str, *, style: str) -> None:
        """An indented line, wrapped under its indent; words (paths) are never broken."""
        wrapped = textwrap.fill(
            line, width=console.width, initial_indent="  ", subsequent_indent="  ",
            break_long_words=False, break_on_hyphens=False,
        )
        console.print(wrapped, style=style, markup=False, soft_wrap=True)

    async def show(event: WorldEvent) -> None:
        if not isinstance(event, MessageEvent):
            return
        message = event.message
        if message.role == "tool":
            answer = approval_answer(message.tool_call_id or "", message.content)
            say(f"↳ {answer or result_summary(message.content or '')}", style="dim")
            return
        if message.content:
            style = {"assistant": "cyan", "system": "red"}.get(message.role, "green")
            console.print(f"[bold {style}]{escape(message.sender)}[/bold {style}]: {escape(message.content)}")
        for call in message.tool_calls or ():
            name, arguments = call.function.name, call.function.arguments
            if is_approval_request(message, call):
                say(f"approval requested: {approval_request_text(arguments)}", style="yellow")
                continue
            say(f"{message.sender} calls {name}({arguments})", style="yellow")
            verdict = await aw.check_tool_call(event.world, name, json.loads(arguments))
            rule = verdict.rule
            by = f"rule '{rule.name}' ({rule.source})" if rule is not None and rule.name else verdict.by
            say(f"policy: {verdict.decision.value}, by {by}", style="magenta")

    return show


async def run_demo(console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    console.width = min(console.width, WIDTH)
    console.print(
        "Agent World demo: scripted agents on the real runtime (storage, routing, tools,\n"
        "policy, approvals) in a temporary directory. No API key, no network; the\n"
        "directory and its database are deleted at the end.\n"
    )
    with tempfile.TemporaryDirectory(prefix="agentworld-demo-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        (work / "NOTES.md").write_text("v2.0: faster turns, human approvals, policies\n")
        db = f"sqlite:///{Path(tmp) / 'demo.db'}"
        async with AgentWorld(db, provider_factory=_demo_provider, in_process=True) as aw:
            await aw.create_world("demo", description="an offline demo world", working_dir=str(work))
            for name, prompt in (
                ("planner", "You plan releases and ask the critic to review."),
                ("critic", "You review plans."),
                ("ops", "You run release chores with tools."),
            ):
                await aw.create_agent("demo", name, provider="scripted", model="echo", system_prompt=prompt)
            runtime = await aw.runtime("demo")
            runtime.bus.subscribe(_show(console, aw), name="demo-console")

            console.rule("Act 1: agents talk by @mention")
            await aw.send("demo", "@planner how should we ship version 2.0?")

            console.print()
            console.rule("Act 2: tools, policy and a human approval")
            result = await aw.send("demo", "@ops read the release notes and mark the release")
            (request,) = result.pending_approvals
            console.print(
                "[dim]  the demo approves it once, in code, as a person would with\n"
                "  agentworld approve WORLD APPROVAL_ID --decision approve[/dim]"
            )
            await aw.approve("demo", request.tool_call_id, decision="approve", scope="once")

            chats = await aw.list_chats("demo")
            audit = await aw.audit_log("demo")
            console.print()
            console.rule("What was stored")
            decisions = ", ".join(
                e.event + (f" {e.decision} {e.scope}" if e.decision else "") for e in audit
            )
            console.print(f"chat title: {escape(chats[0].name)}")
            console.print(f"file RELEASED created: {'yes' if (work / 'RELEASED').exists() else 'no'}")
            console.print(f"audit log: {escape(decisions)}")

    console.print("\nTry it yourself (no API key needed):")
    for line in TRY_NEXT:
        console.print(f"  {escape(line)}", soft_wrap=True)
