"""What containment costs a shell call (SPEC C1): ``shell_cmd`` running ``echo x`` in
bubblewrap beside the same call uncontained, in the same run.

What is measured: ``run_shell`` as the runtime calls it -- the guard, bash, and for the
contained case bubblewrap with its namespaces and mounts -- from the call to its result,
``--n`` calls per variant after a warm-up, the variants alternating call by call so a noisy
moment hits both. Printed: median, p90, the ratio contained / uncontained and the
milliseconds containment adds per call. The bare ``bwrap ... /bin/true`` start beside it shows
how much of that is bubblewrap itself.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time

from _harness import percentile

from agentworld.tools.builtin.shell import run_shell
from agentworld.tools.registry import ToolContext
from agentworld.tools.sandbox import bubblewrap_problem, sandboxed_argv


async def time_calls(n: int, work: str) -> dict[str, list[float]]:
    """Milliseconds per call for each variant, alternating call by call."""
    contexts = {
        mode: ToolContext(world="bench", chat_id="c", agent="a", working_dir=work, sandbox=mode)
        for mode in ("off", "on")
    }
    timings: dict[str, list[float]] = {mode: [] for mode in contexts}
    for _ in range(5):  # warm-up: bash lookup, the bubblewrap probe, page cache
        for context in contexts.values():
            await run_shell({"command": "echo x"}, context)
    for _ in range(n):
        for mode, context in contexts.items():
            started = time.perf_counter()
            result = await run_shell({"command": "echo x"}, context)
            timings[mode].append((time.perf_counter() - started) * 1000)
            assert (result["exit_code"], result["stdout"]) == (0, "x\n"), result
    return timings


def bare_bwrap(n: int, work: str) -> list[float]:
    """Milliseconds to start and end ``/bin/true`` in the same sandbox, no guard, no bash."""
    argv = sandboxed_argv(["/bin/true"], writable=[work], cwd=work, network="deny")
    found = []
    for _ in range(n):
        started = time.perf_counter()
        subprocess.run(argv, check=True)
        found.append((time.perf_counter() - started) * 1000)
    return found


def summary(values: list[float]) -> str:
    return f"median {statistics.median(values):6.2f} ms  p90 {percentile(values, 0.9):6.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200, help="calls per variant")
    options = parser.parse_args()
    problem = bubblewrap_problem()
    if problem is not None:
        raise SystemExit(f"no sandbox here: {problem}")
    with tempfile.TemporaryDirectory(prefix="agentworld-bench-") as work:
        timings = asyncio.run(time_calls(options.n, work))
        bare = bare_bwrap(options.n, work)
    off, on = timings["off"], timings["on"]
    print(f"shell_cmd 'echo x', {options.n} calls each, alternating")
    print(f"  uncontained   {summary(off)}")
    print(f"  contained     {summary(on)}")
    print(f"  bare bwrap    {summary(bare)}  (bwrap ... /bin/true alone)")
    ratio = statistics.median(on) / statistics.median(off)
    added = statistics.median(on) - statistics.median(off)
    print(f"  contained / uncontained: {ratio:.2f}x, +{added:.2f} ms per call (medians)")


if __name__ == "__main__":
    main()
