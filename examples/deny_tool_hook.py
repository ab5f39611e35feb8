"""An on_event hook that stops a tool call and answers in its place. Offline: scripted model.

The model asks to delete a file; the hook sees the tool calls before anything runs, refuses,
and responds instead — the file survives and the transcript says why.

Run: python examples/deny_tool_hook.py
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from agentworld import (
    AgentWorld,
    HookEvent,
    LLMRequest,
    LLMResponse,
    Respond,
    ScriptedProvider,
    ToolCall,
    ToolCallEvent,
)


def cleaner(request: LLMRequest) -> LLMResponse:
    command = json.dumps({"command": "rm important.txt"})
    return LLMResponse.calls([ToolCall.of("call_rm", "shell_cmd", command)])


async def no_deleting(event: HookEvent, respond: Respond) -> None:
    if isinstance(event, ToolCallEvent):
        commands = [json.loads(c.function.arguments).get("command", "") for c in event.tool_calls]
        if any(cmd.startswith("rm ") for cmd in commands):
            await respond("I was about to delete files; the application stopped me. Nothing was deleted.")


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        (work / "important.txt").write_text("keep me")
        async with AgentWorld(
            f"sqlite:///{Path(tmp) / 'example.db'}",
            provider_factory=lambda agent: ScriptedProvider(cleaner),
            on_event=no_deleting,
        ) as aw:
            await aw.create_world("office", working_dir=str(work))
            await aw.create_agent("office", "cleaner", provider="scripted", model="echo")

            result = await aw.send("office", "@cleaner tidy up the folder")

            for message in result.messages:
                print(f"{message.role:9} {message.sender}: {message.content or message.tool_calls}")
            assert (work / "important.txt").read_text() == "keep me"
            assert result.pending_approvals == []  # stopped before it could even ask
            assert "Nothing was deleted" in (result.messages[-1].content or "")


if __name__ == "__main__":
    asyncio.run(main())
