"""``agentworld demo``: a conversation between scripted agents, offline, in a temp database.

It runs the real runtime (storage, event bus, routing, streaming events); only
the model is scripted, so it works with no API key and no network.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agentworld.agent_world import AgentWorld
from agentworld.models import Agent, LLMResponse
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


_SCRIPTS = {"planner": _planner, "critic": _critic}


def _demo_provider(agent: Agent) -> LLMProvider:
    return ScriptedProvider(_SCRIPTS[agent.name], chunk_size=6)


async def run_demo(console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    with tempfile.TemporaryDirectory(prefix="agentworld-demo-") as tmp:
        db = f"sqlite:///{Path(tmp) / 'demo.db'}"
        async with AgentWorld(db, provider_factory=_demo_provider) as aw:
            await aw.create_world("demo", description="an offline demo world", turn_limit=5)
            await aw.create_agent(
                "demo", "planner", provider="scripted", model="echo",
                system_prompt="You plan releases and ask the critic to review.",
            )
            await aw.create_agent(
                "demo", "critic", provider="scripted", model="echo",
                system_prompt="You review plans.",
            )
            runtime = await aw.runtime("demo")

            def show(event: WorldEvent) -> None:
                if isinstance(event, MessageEvent) and event.message.content:
                    message = event.message
                    style = "cyan" if message.role == "assistant" else "green"
                    console.print(
                        f"[bold {style}]{escape(message.sender)}[/bold {style}]: "
                        f"{escape(message.content or '')}\n"
                    )

            runtime.bus.subscribe(show, name="demo-console")
            console.print(f"[dim]database: {db}[/dim]")
            console.print("[dim]two scripted agents, planner and critic, in world 'demo'[/dim]\n")
            result = await aw.send("demo", "@planner how should we ship version 2.0?")
            chats = await aw.list_chats("demo")
            console.print(
                f"\n[dim]{len(result.messages)} messages stored in chat "
                f"'{chats[0].name}'; the conversation ended with a <world>DONE</world> tag.[/dim]"
            )
