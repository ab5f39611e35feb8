"""Approval latency (SPEC §6): the pure grant lookup, and approval injection end to end.

- lookup: does any remembered grant cover this call? (``find_covering_grant`` over N grants,
  for a plain tool and for a compound shell command). Target < 100 µs.
- injection: from an ASK_USER decision to the request stored (injected assistant message and
  pending row, one transaction, plus the audit entry) and published. The seed's floor is
  < 50 ms; we aim far lower.

Run: python benchmarks/approval_latency.py [--grants 50] [--injections 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from agentworld.agent_world import AgentWorld
from agentworld.approval.grants import Grant, find_covering_grant
from agentworld.models import ToolCall, new_id
from agentworld.runtime.approvals import request_approval
from agentworld.tools.registry import ToolContext

SHELL_TOOL = "shell_cmd"


def _summary(label: str, samples_ns: list[int], target: str) -> None:
    ordered = sorted(samples_ns)
    median = statistics.median(ordered) / 1000
    p99 = ordered[int(len(ordered) * 0.99) - 1] / 1000
    print(f"  {label:<44} median {median:9.2f} us   p99 {p99:9.2f} us   {target}")


def bench_lookup(grant_count: int, iterations: int) -> None:
    grants = [
        Grant(grant_id=f"g{i}", world="w", scope="session", tool_name=f"tool_{i}", agent="a1", chat_id="c1")
        for i in range(grant_count - 2)
    ]
    grants.append(Grant(grant_id="plain", world="w", scope="session", tool_name="deploy", agent="a1", chat_id="c1"))
    grants.append(
        Grant(
            grant_id="shell", world="w", scope="always", tool_name=SHELL_TOOL,
            roots=frozenset({"git", "ls", "echo"}),
        )
    )
    cases = {
        "plain tool, covered (last of the list)": ("deploy", {"env": "staging"}),
        "plain tool, not covered": ("unknown_tool", {"x": 1}),
        "shell, 3-part compound command, covered": (SHELL_TOOL, {"command": "git status && ls -la | echo ok"}),
    }
    print(f"Grant lookup over {grant_count} grants")
    for label, (tool, args) in cases.items():
        samples = []
        for _ in range(iterations):
            start = time.perf_counter_ns()
            find_covering_grant(grants, tool, args, agent="a1", chat_id="c1")
            samples.append(time.perf_counter_ns() - start)
        _summary(label, samples, "target < 100 us")


async def bench_injection(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with AgentWorld(f"sqlite:///{Path(tmp) / 'bench.db'}") as aw:
            await aw.create_world("w", working_dir=tmp)
            await aw.create_agent("w", "a1", provider="scripted", model="echo")
            chat = (await aw.new_chat("w")).chat_id
            runtime = await aw.runtime("w")
            registry = await runtime.tools()
            tool = registry.get(SHELL_TOOL)
            assert tool is not None
            context = ToolContext(world="w", chat_id=chat, agent="a1", working_dir=tmp)
            samples = []
            for n in range(count + 20):
                call = ToolCall.of(new_id("call_"), SHELL_TOOL, json.dumps({"command": f"touch f{n}"}))
                start = time.perf_counter_ns()
                await request_approval(
                    runtime._turns, tool, call, {"command": f"touch f{n}"}, context,
                    batch_id=new_id("msg_"), trigger_sender="human", reply_to=None,
                )
                if n >= 20:  # warm-up excluded
                    samples.append(time.perf_counter_ns() - start)
            print(f"Approval injection ({count} requests, SQLite file)")
            _summary("ASK_USER -> request stored + published", samples, "seed floor < 50,000 us")
            pending = await aw.storage.pending.find("w", kind="approval")
            print(f"  pending approvals stored: {len(pending)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grants", type=int, default=50)
    parser.add_argument("--lookups", type=int, default=5000)
    parser.add_argument("--injections", type=int, default=300)
    args = parser.parse_args()
    bench_lookup(args.grants, args.lookups)
    asyncio.run(bench_injection(args.injections))


if __name__ == "__main__":
    main()
