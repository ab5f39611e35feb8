"""Two agents talk by @mention until one ends the conversation. Offline: scripted models.

Run: python examples/two_agents.py
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from agentworld import Agent, AgentWorld, LLMRequest, LLMResponse, ScriptedProvider


def writer(request: LLMRequest) -> LLMResponse:
    last = request.messages[-1].content or ""
    if "[editor]" in last:
        return LLMResponse.text("Fixed the typo. <world>DONE</world>")
    return LLMResponse.text("@editor Draft: 'Agent World lets agents tlak to each other.'")


def editor(request: LLMRequest) -> LLMResponse:
    return LLMResponse.text("One typo: 'tlak' should be 'talk'.")


def scripted(agent: Agent) -> ScriptedProvider:
    return ScriptedProvider({"writer": writer, "editor": editor}[agent.name])


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with AgentWorld(f"sqlite:///{Path(tmp) / 'example.db'}", provider_factory=scripted) as aw:
            await aw.create_world("newsroom")
            await aw.create_agent("newsroom", "writer", provider="scripted", model="echo")
            await aw.create_agent("newsroom", "editor", provider="scripted", model="echo")

            result = await aw.send("newsroom", "@writer draft a one-line tagline")

            for message in result.messages:
                print(f"{message.sender}: {message.content}")
            spoken = [m.sender for m in result.messages if m.role == "assistant"]
            assert spoken == ["writer", "editor", "writer"], spoken
            assert result.messages[-1].content == "Fixed the typo."  # the DONE tag ends it, unaddressed
            assert result.messages[2].content.startswith("@writer ")  # auto-mention of the sender


if __name__ == "__main__":
    asyncio.run(main())
