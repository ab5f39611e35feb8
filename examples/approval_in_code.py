"""A tool call that needs a person, approved in code. Offline: scripted model, real shell.

The agent asks to run `touch report.txt`; shell commands need approval, so the call waits.
The application lists the pending approval, checks it, and approves it once; the command
runs and the model sees its real result.

Run: python examples/approval_in_code.py
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from agentworld import AgentWorld, LLMRequest, LLMResponse, ScriptedProvider, ToolCall


def reporter(request: LLMRequest) -> LLMResponse:
    if request.messages[-1].role == "tool":
        result = json.loads(request.messages[-1].content or "{}")
        return LLMResponse.text(f"The report file is ready (exit code {result.get('exit_code')}).")
    return LLMResponse.calls([ToolCall.of("call_touch", "shell_cmd", json.dumps({"command": "touch report.txt"}))])


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        async with AgentWorld(
            f"sqlite:///{Path(tmp) / 'example.db'}", provider_factory=lambda agent: ScriptedProvider(reporter)
        ) as aw:
            await aw.create_world("reports", working_dir=str(work))
            await aw.create_agent("reports", "reporter", provider="scripted", model="echo")

            first = await aw.send("reports", "@reporter prepare the report file")
            (request,) = await aw.approvals("reports")
            print("waiting for approval:", request.message)
            assert request.tool_name == "shell_cmd" and not (work / "report.txt").exists()

            done = await aw.approve("reports", request.tool_call_id, decision="approve", scope="once")

            print("answer:", done.messages[-1].content)
            assert (work / "report.txt").exists()
            assert first.pending_approvals and done.pending_approvals == []
            assert done.messages[-1].content == "The report file is ready (exit code 0)."


if __name__ == "__main__":
    asyncio.run(main())
