"""CLI start-up time (SPEC §6: `agentworld --help`, `messages`, `approvals` and `policy test`
each in < 0.5 s as a whole process).

People and tests run the CLI hundreds of times a day, so a command line imports only the
module of the command it runs, and the heavy parts (provider SDKs, MCP, the server, the
policy parser) load only when a command needs them. Prints the median and worst of N runs of
each command in a fresh process.

Run: python benchmarks/cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "agentworld", *args], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{Path(tmp) / 'cli.db'}"
        subprocess.run([sys.executable, "-m", "agentworld", "--db", db, "world", "create", "w"], check=True, capture_output=True)
        subprocess.run(
            [sys.executable, "-m", "agentworld", "--db", db, "agent", "create", "w", "a1", "--provider", "scripted", "--model", "echo"],
            check=True, capture_output=True,
        )
        subprocess.run([sys.executable, "-m", "agentworld", "--db", db, "send", "w", "@a1 hi"], check=True, capture_output=True)
        commands = {
            "agentworld --help": ["--help"],
            "agentworld messages w": ["--db", db, "messages", "w"],
            "agentworld messages w --json": ["--db", db, "messages", "w", "--json"],
            "agentworld approvals w": ["--db", db, "approvals", "w"],
            "agentworld policy test (shell)": ["policy", "test", "--tool", "shell_cmd", "--args", '{"command": "ls && rm x"}'],
        }
        print(f"CLI start-up, {runs} runs each (target < 0.5 s each)")
        for label, args in commands.items():
            samples = [timed(args) for _ in range(runs)]
            print(f"  {label:<34} median {statistics.median(samples):.3f} s   worst {max(samples):.3f} s")


if __name__ == "__main__":
    main()
